"""hamburger: multi-token decoding with one KV-cache entry per token group (HAMburger)."""

import os as _os


def _prefer_avx2_mkl_path() -> None:
    """MKL's small-matrix fp32 path is slow on AMD's AVX2 CPUs unless MKL_CBWR=AVX2 is set before torch loads.

    Set it only on non-Intel CPUs that have AVX2 and only when the user has not chosen a value: on Intel CPUs MKL
    picks its kernels itself, and forcing AVX2 on an AVX-512 Xeon makes base forwards of 2-10 positions (verify
    mode's) up to 1.7x slower (experiments/2026-11-27-growing-first/forward_cost.jsonl). Every method run in one
    process shares the setting, so comparisons stay fair; benchmarks record it.
    """
    if "MKL_CBWR" in _os.environ:
        return
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
    except OSError:
        return
    if " avx2" in info and "GenuineIntel" not in info:
        _os.environ["MKL_CBWR"] = "AVX2"


_prefer_avx2_mkl_path()

__version__ = "0.1.0"

# The public API, imported on first use so that `import hamburger` stays light (and the MKL setting
# above is in place before torch loads).
_EXPORTS = {
    "load_model": "hamburger.core.loading",
    "generate": "hamburger.engine.generate",
    "Generation": "hamburger.engine.generate",
    "GenerationResult": "hamburger.engine.generate",
    "encode_prompt": "hamburger.engine.prompt",
    "DecodingConfig": "hamburger.engine.sampling",
    "verify_generate": "hamburger.engine.verify",
    "VerifyGeneration": "hamburger.engine.verify",
    "Folding": "hamburger.engine.folding",
    "PromptCache": "hamburger.engine.prompt_cache",
    "HamburgerError": "hamburger.errors",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hamburger' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
