"""forcekit's exceptions: one per C status code (fk_status), each carrying the context's detail."""


class ForcekitError(RuntimeError):
    """A forcekit C call failed.

    Attributes:
        status: the C status code (an int, fk_status).
        status_name: fk_status_string(status), e.g. "kernel build failed".
        detail: fk_context_last_error() at the failure: the OpenCL call that failed, the build
            log, the particle that was rejected; may be empty.
    """

    def __init__(self, status: int, status_name: str, detail: str = ""):
        self.status = status
        self.status_name = status_name
        self.detail = detail
        super().__init__(f"{status_name}: {detail}" if detail else status_name)


class InvalidArgumentError(ForcekitError, ValueError):
    """FK_ERR_INVALID_ARGUMENT: an unknown name, an option out of range."""


class InvalidInputError(ForcekitError, ValueError):
    """FK_ERR_INVALID_INPUT: particle data the kernel cannot evaluate (NaN, coincident bodies)."""


class NoDeviceError(ForcekitError, LookupError):
    """FK_ERR_NO_DEVICE: no OpenCL platform or device at all."""


class DeviceNotFoundError(ForcekitError, LookupError):
    """FK_ERR_DEVICE_NOT_FOUND: no device matches the selector."""


class UnsupportedError(ForcekitError):
    """FK_ERR_UNSUPPORTED: the device lacks a feature the request needs (fp64, work-group size)."""


class KernelSourceError(ForcekitError):
    """FK_ERR_KERNEL_SOURCE: the kernel directory or a .cl file is missing."""


class BuildError(ForcekitError):
    """FK_ERR_BUILD: the OpenCL compiler rejected the kernel; detail holds the build log."""


class DeviceMemoryError(ForcekitError, MemoryError):
    """FK_ERR_DEVICE_MEMORY: the device could not allocate the buffers."""


class OpenCLError(ForcekitError):
    """FK_ERR_OPENCL: another OpenCL failure; detail names the failing call."""


class StateError(ForcekitError):
    """FK_ERR_STATE: calls in the wrong order (compute before set_particles)."""


class AccumulatorOverflowError(ForcekitError, ArithmeticError):
    """FK_ERR_OVERFLOW: a fixed-point accumulator (fixed64) went out of its range."""

_BY_STATUS = {
    1: InvalidArgumentError,
    2: InvalidInputError,
    3: MemoryError,
    4: NoDeviceError,
    5: DeviceNotFoundError,
    6: UnsupportedError,
    7: KernelSourceError,
    8: BuildError,
    9: DeviceMemoryError,
    10: OpenCLError,
    11: ForcekitError,
    12: ForcekitError,
    13: StateError,
    14: AccumulatorOverflowError,
}


def from_status(status: int, name: str, detail: str) -> BaseException:
    """The exception for a C status code (called by the extension)."""
    cls = _BY_STATUS.get(status, ForcekitError)
    if cls is MemoryError:
        return MemoryError(f"{name}: {detail}" if detail else name)
    return cls(status, name, detail)
