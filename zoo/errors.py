"""User-facing errors. The CLI prints str(error) as one paragraph and exits 2, never a traceback."""


class UserError(Exception):
    """A mistake the user can fix: bad spec, missing data, unknown name, bad file."""
