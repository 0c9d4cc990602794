"""User-facing errors. The CLI prints str(error) as one paragraph and exits 2, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix: bad spec, missing data, unknown name, bad file."""


class DiskFullError(UserError):
    """No space left on the device a run writes to: free space and run the same command again."""


def disk_full(path, e: OSError) -> DiskFullError:
    return DiskFullError(f"no space left on device writing {path} ({e.strerror or e}); free some space "
                         "there (old runs, checkpoints) or use another folder, then run the same command "
                         "again: it resumes from the last checkpoint")
