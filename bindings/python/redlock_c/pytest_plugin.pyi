from typing import Iterator

from .testing import FakeMasters

def fake_masters() -> Iterator[FakeMasters]: ...
