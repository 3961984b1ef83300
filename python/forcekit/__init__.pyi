# Type stubs of the forcekit package (forcekit/__init__.py documents each name).
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._errors import (
    AccumulatorOverflowError as AccumulatorOverflowError,
    BuildError as BuildError,
    DeviceMemoryError as DeviceMemoryError,
    DeviceNotFoundError as DeviceNotFoundError,
    ForcekitError as ForcekitError,
    InvalidArgumentError as InvalidArgumentError,
    InvalidInputError as InvalidInputError,
    KernelSourceError as KernelSourceError,
    NoDeviceError as NoDeviceError,
    OpenCLError as OpenCLError,
    StateError as StateError,
    UnsupportedError as UnsupportedError,
)

__version__: str
ArrayLike = npt.ArrayLike
Box = Union[None, float, Sequence[float]]

def devices() -> List[Dict[str, Any]]: ...
def kernels() -> List[Dict[str, Any]]: ...
def accumulators() -> List[Dict[str, Any]]: ...

class Context:
    def __init__(
        self, device: Optional[str] = ..., *, kernel_dir: Optional[str] = ..., cache_dir: Optional[str] = ...
    ) -> None: ...
    @property
    def device(self) -> Dict[str, Any]: ...
    @property
    def last_error(self) -> str: ...
    @property
    def warnings(self) -> str: ...
    @property
    def kernel_dir(self) -> str: ...
    @property
    def cache_dir(self) -> Optional[str]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Context: ...
    def __exit__(self, *exc: Any) -> None: ...
    def evaluator(
        self,
        kernel: str,
        *,
        accum: Optional[str] = ...,
        algorithm: str = ...,
        eps: float = ...,
        cutoff: float = ...,
        coulomb: float = ...,
        box: Box = ...,
        parameters: Optional[Sequence[float]] = ...,
        potential: bool = ...,
        reproducible: bool = ...,
        skin: float = ...,
        expected_count: int = ...,
        unroll: Optional[Tuple[int, int]] = ...,
        work_group_size: int = ...,
        local_tiling: Optional[bool] = ...,
        j_splits: int = ...,
        lanes: int = ...,
        exclusion_mode: str = ...,
        max_exclusions: int = ...,
        neighbor_lists: str = ...,
        scale_policy: str = ...,
        result_type: str = ...,
        positions: str = ...,
        refresh_cache: bool = ...,
        **law_parameters: Any,
    ) -> Evaluator: ...

class Evaluator:
    context: Context
    kernel: str
    last_seconds: float
    @property
    def count(self) -> int: ...
    @property
    def force_components(self) -> int: ...
    def set_particles(
        self,
        positions: ArrayLike,
        masses_or_charges: Optional[ArrayLike] = ...,
        velocities: Optional[ArrayLike] = ...,
        types: Optional[ArrayLike] = ...,
    ) -> None: ...
    def update_positions(self, positions: ArrayLike, velocities: Optional[ArrayLike] = ...) -> None: ...
    def set_pair_table(self, table: ArrayLike, present: Optional[ArrayLike] = ...) -> None: ...
    def set_exclusions(self, pairs: ArrayLike) -> None: ...
    def compute(self, out: Optional[npt.NDArray[np.float64]] = ...) -> npt.NDArray[np.float64]: ...
    def potentials(self) -> npt.NDArray[np.float64]: ...
    @property
    def variant(self) -> Dict[str, Any]: ...
    @property
    def reproducible(self) -> Optional[bool]: ...
    @property
    def reproducible_reason(self) -> str: ...
    def integrator(
        self,
        scheme: str = ...,
        *,
        dt: float,
        temperature: float = ...,
        friction: float = ...,
        seed: int = ...,
        masses: Optional[ArrayLike] = ...,
    ) -> Integrator: ...

class Integrator:
    evaluator: Evaluator
    scheme: str
    def set_state(self, positions: ArrayLike, velocities: Optional[ArrayLike] = ..., step: int = ...) -> None: ...
    def step(self, steps: int = ...) -> None: ...
    def state(self) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], int]: ...
    def energies(self) -> Tuple[float, Optional[float]]: ...
    @property
    def counters(self) -> Dict[str, int]: ...

def reference_forces(
    kernel: str,
    positions: ArrayLike,
    masses_or_charges: Optional[ArrayLike] = ...,
    velocities: Optional[ArrayLike] = ...,
    types: Optional[ArrayLike] = ...,
    *,
    eps: float = ...,
    cutoff: float = ...,
    coulomb: float = ...,
    box: Box = ...,
    parameters: Optional[Sequence[float]] = ...,
    pair_table: Optional[ArrayLike] = ...,
    exclusions: Optional[ArrayLike] = ...,
    potential: bool = ...,
    **law_parameters: Any,
) -> Union[npt.NDArray[np.float64], Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]: ...
def tune(
    kernel: str,
    accum: Optional[str] = ...,
    *,
    context: Optional[Context] = ...,
    device: Optional[str] = ...,
    n: int = ...,
    budget_seconds: float = ...,
    database: Optional[str] = ...,
    seed: int = ...,
    unroll: Optional[Tuple[int, int]] = ...,
    work_group_size: int = ...,
    local_tiling: Optional[bool] = ...,
    j_splits: int = ...,
    lanes: int = ...,
    progress: Optional[Callable[[Dict[str, Any]], Any]] = ...,
) -> Dict[str, Any]: ...
