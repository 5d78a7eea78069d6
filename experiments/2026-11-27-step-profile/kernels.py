"""The kernel alternatives this session weighed for the base forward's projections on the CPU, and what is left
besides them. Writes one JSON object:

- ``projections_ms``: the 210 projections of SmolLM2-135M's 30 layers (random fp32 weights of its shapes, too many to
  stay in cache) on 1..11 rows, median of 15 passes each: ``linear`` (`F.linear`, as the lean forward runs them),
  ``fused`` (q/k/v and gate/up as one matrix each), ``transposed`` (weights stored [in, out], `x @ w`),
  ``mkl_packed`` (MKL's `cblas_sgemm_pack` once per weight, `cblas_sgemm_compute` per call, through torch's own
  library), ``onednn_packed`` (`mkldnn._reorder_linear_weight` for 4 rows, `mkldnn._linear_pointwise`);
- ``mkl_packed_bytes_over_weights``: what MKL's packed buffers take against the weights themselves;
- ``gemv_gb_s``: bytes of weight read per second by one-row `F.linear` over uncached matrices of each shape;
- ``lm_head_ms``: the 49,152-row LM head on 1 and 3 rows, fp32 against bf16 weights (uncached);
- ``outside_projections_ms``: the lean forward of the default model on a 300-slot cache with every projection
  replaced by a zero output of its shape (norms, rotary embedding, attention, cache writes), 1, 3 and 5 positions;
- ``verify_forwards_by_positions``: from the speed run ``speed-t128.json`` here, the share of lossless verify's base
  forwards (after the prompt's) by the positions they took.

    python experiments/2026-11-27-step-profile/kernels.py > experiments/2026-11-27-step-profile/kernels.json
"""

import ctypes
import json
import statistics
import time
from pathlib import Path

import torch
from torch.nn import functional as F

import hamburger  # noqa: F401  (its MKL setting, before torch's first product)
from hamburger.bench.machine import machine_info
from hamburger.core import lean
from hamburger.core.loading import load_model
from hamburger.core.modules import base_decoder_stack
from hamburger.engine.cache import spare_slots_cache

HERE = Path(__file__).parent
LAYERS = 30
SHAPES = [(576, 576), (192, 576), (192, 576), (576, 576), (1536, 576), (1536, 576), (576, 1536)]  # q k v o gate up down
FUSED = [(960, 576), (576, 576), (3072, 576), (576, 1536)]  # qkv o gate_up down
ROWS = (1, 2, 3, 4, 5, 6, 8, 11)


def median_ms(fn, reps: int = 15, warm: int = 3) -> float:
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(1000 * statistics.median(times), 3)


class MklPacked:
    """MKL's packed single-precision product, through the symbols torch's CPU library exports."""

    ROW_MAJOR, B_MATRIX, NO_TRANS, TRANS, PACKED = 101, 162, 111, 112, 151

    def __init__(self):
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_float
        self.size = lib.cblas_sgemm_pack_get_size
        self.size.restype, self.size.argtypes = ctypes.c_size_t, [i, i, i, i]
        self.pack_fn = lib.cblas_sgemm_pack
        self.pack_fn.restype, self.pack_fn.argtypes = None, [i, i, i, i, i, i, f, p, i, p]
        self.compute = lib.cblas_sgemm_compute
        self.compute.restype, self.compute.argtypes = None, [i, i, i, i, i, i, p, i, p, i, f, p, i]

    def pack(self, w: torch.Tensor, rows: int = 4) -> torch.Tensor:
        n, k = w.shape
        buffer = torch.empty(self.size(self.B_MATRIX, rows, n, k) // 4 + 1)
        self.pack_fn(self.ROW_MAJOR, self.B_MATRIX, self.TRANS, rows, n, k, 1.0, w.data_ptr(), k, buffer.data_ptr())
        return buffer

    def linear(self, x: torch.Tensor, w: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
        (m, k), n = x.shape, w.shape[0]
        y = torch.empty(m, n)
        self.compute(self.ROW_MAJOR, self.NO_TRANS, self.PACKED, m, n, k, x.data_ptr(), k, packed.data_ptr(), k, 0.0,
                     y.data_ptr(), n)
        return y


def projections() -> tuple[dict, float]:
    g = torch.Generator().manual_seed(0)
    weights = [[torch.randn(o, i, generator=g) for o, i in SHAPES] for _ in range(LAYERS)]
    fused = [[torch.randn(o, i, generator=g) for o, i in FUSED] for _ in range(LAYERS)]
    transposed = [[w.t().contiguous() for w in layer] for layer in weights]
    mkl = MklPacked()
    packed = [[mkl.pack(w) for w in layer] for layer in weights]
    onednn = [[torch.ops.mkldnn._reorder_linear_weight(w, 4) for w in layer] for layer in weights]
    packed_bytes = sum(b.numel() * 4 for layer in packed for b in layer)
    weight_bytes = sum(w.numel() * 4 for layer in weights for w in layer)
    out = {}
    for rows in ROWS:
        x = {576: torch.randn(rows, 576, generator=g), 1536: torch.randn(rows, 1536, generator=g)}
        out[rows] = {
            "linear": median_ms(lambda: [F.linear(x[w.shape[1]], w) for layer in weights for w in layer]),
            "fused": median_ms(lambda: [F.linear(x[w.shape[1]], w) for layer in fused for w in layer]),
            "transposed": median_ms(lambda: [x[w.shape[0]] @ w for layer in transposed for w in layer]),
            "mkl_packed": median_ms(lambda: [mkl.linear(x[w.shape[1]], w, b) for layer, bs in zip(weights, packed)
                                             for w, b in zip(layer, bs)]),
            "onednn_packed": median_ms(lambda: [
                torch.ops.mkldnn._linear_pointwise(x[w.shape[1]], b, None, "none", [], "")
                for layer, bs in zip(weights, onednn) for w, b in zip(layer, bs)]),
        }
    return out, round(packed_bytes / weight_bytes, 2)


def gemv_bandwidth() -> dict:
    out = {}
    for o, i in sorted(set(SHAPES + FUSED)) + [(49152, 576)]:
        count = max(1, int(400e6 / (o * i * 4)))
        mats = [torch.randn(o, i) for _ in range(count)]
        x = torch.randn(1, i)
        ms = median_ms(lambda: [F.linear(x, w) for w in mats], reps=10)
        out[f"{o}x{i}"] = round(count * o * i * 4 / (ms / 1000) / 1e9, 1)
    return out


def lm_head() -> dict:
    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        heads = [torch.randn(49152, 576).to(dtype) for _ in range(4)]
        for rows in (1, 3):
            x = torch.randn(rows, 576).to(dtype)
            out[f"{str(dtype).split('.')[-1]}_{rows}_rows"] = round(
                median_ms(lambda: [F.linear(x, w) for w in heads], reps=10) / 4, 3)
    return out


def outside_projections() -> dict:
    model = load_model(None)[0]
    stack = base_decoder_stack(model.base)
    runner = lean.LeanStack(stack)
    d, slots = stack.config.hidden_size, 300
    g = torch.Generator().manual_seed(0)
    real = lean._linear

    def empty(module, x):
        inner = module._modules.get("base_layer")
        return torch.zeros(*x.shape[:-1], (module if inner is None else inner)._parameters["weight"].shape[0])

    out = {}
    with torch.inference_mode():
        cache = spare_slots_cache(stack.config)
        stack(inputs_embeds=torch.randn(1, slots, d, generator=g), position_ids=torch.arange(slots)[None],
              past_key_values=cache, use_cache=True)
        for new in (1, 3, 5):
            x = torch.randn(1, new, d, generator=g)
            mask = torch.ones(1, 1, new, slots + new, dtype=torch.bool)
            positions = torch.arange(slots, slots + new)[None]

            def forward():
                runner(x, positions, mask, cache, model.config.tap_layers)
                cache.crop(-new)
            lean._linear = empty
            try:
                out[new] = median_ms(forward, reps=100, warm=5)
            finally:
                lean._linear = real
    return out


def forwards_by_positions() -> dict:
    run = json.loads((HERE / "speed-t128.json").read_text())
    rows = [r for r in run["rows"] if r["method"] == "verify@c0.3:v4096:p10:n"]
    summary = next(e for e in run["summary"] if e["category"] == "all" and e["method"] == "verify@c0.3:v4096:p10:n")
    steps = sum(r["forwards"] - 1 for r in rows)
    at_least = [steps] + summary["drafts_by_position"] + [0]  # steps with >= i drafts, i = 0, 1, ...
    shares = {f"{i + 1}": round((at_least[i] - at_least[i + 1]) / steps, 3) for i in range(len(at_least) - 1)}
    return {"steps": steps, "share_by_positions": shares,
            "share_4_to_8": round((at_least[3] - at_least[8]) / steps, 3)}


def main() -> None:
    torch.set_num_threads(2)
    with torch.inference_mode():
        proj, packed_ratio = projections()
        out = {"machine": machine_info(2, "float32"), "projections_ms": proj,
               "mkl_packed_bytes_over_weights": packed_ratio, "gemv_gb_s": gemv_bandwidth(), "lm_head_ms": lm_head()}
    out["outside_projections_ms"] = outside_projections()
    out["verify_forwards_by_positions"] = forwards_by_positions()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
