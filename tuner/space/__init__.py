"""Search spaces: the papers' tuning ranges (thesis Tables 2.4-2.6, §4.6) read from YAML and validated.

* `tunable`: which trainer config fields a space may tune, and how (derived from `TrainConfig`).
* `params`: one hyperparameter's sampling spec, a union tagged by `scale` (linear, log, int, categorical).
* `model`: `SpaceFile` (the file format) and `SearchSpace` (validated, named; `to_dict`/`from_dict`).
* `settings`: a trainer setting's value under the fixed settings (`fixed_setting`), the one way to read it.
* `files`: finding spaces by name or path, and `resolve_space`, the one way in for study creation.
* `schema`: the JSON schema of a space file.

Every error is a `SpaceError` naming the file, the parameter and what is allowed.
"""

from tuner.space.errors import SpaceError
from tuner.space.files import (
    BUILTIN_SPACES_DIR,
    SPACES_ENV,
    find_space,
    list_spaces,
    load_space,
    resolve_space,
    space_dirs,
)
from tuner.space.model import NAME_PATTERN, SearchSpace, SpaceFile
from tuner.space.tunable import TUNABLES

__all__ = [
    "BUILTIN_SPACES_DIR",
    "NAME_PATTERN",
    "SPACES_ENV",
    "TUNABLES",
    "SearchSpace",
    "SpaceError",
    "SpaceFile",
    "find_space",
    "list_spaces",
    "load_space",
    "resolve_space",
    "space_dirs",
]
