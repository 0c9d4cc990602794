"""User-facing errors. The CLI prints str(error) as one paragraph and exits 2, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix: bad spec, missing data, unknown name, bad file."""


class DiskFullError(UserError):
    """No space left on the device a run writes to: free space and run the same command again."""


def disk_full(path, e: OSError) -> DiskFullError:
    return DiskFullError(f"no space left on device writing {path} ({e.strerror or e}); free some space "
                         "there (old runs, checkpoints) or use another folder, then run the same command "
                         "again: it resumes from the last checkpoint")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, as Ctrl-C's KeyboardInterrupt is."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after the command said so itself (one line with its rerun): passed on to a Python caller, not said twice."""


SIGTERMS = []  # one entry per SIGTERM received: code that catches the interrupt (Ray Tune) may re-raise it bare


def on_sigterm(signum=None, frame=None):
    SIGTERMS.append(signum)
    raise Terminated()


def reclaim_sigterm() -> None:
    """SIGTERM ends zoo as Ctrl-C does. `ray.init` installs Ray's own handler (it prints a stack and
    dies without zoo's message or cleanup), so whoever starts Ray takes the signal back after it."""
    import signal
    import threading
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_sigterm)
