"""Published attention-kernel throughput: the rate of each fused-attention implementation relative to
FlashAttention-2's, which the ``attention_kernels`` effect multiplies the fitted attention-core rate by.

Source: Shah et al., FlashAttention-3: Fast and Accurate Attention with Asynchrony and Low-precision
(arXiv:2407.08608, 2024), §4.1, measured on an H100 80GB SXM5 at 1,830 MHz with cuDNN 9.1.1.17 and
FlashAttention 2.5.8 (Appendix C.1), BF16, head dimension 128, 16k tokens per batch (hidden 2,048, 16 heads),
sequence length 8k, the bar labels of Figure 5(d) ("forward, with causal mask, head dim 128") and Figure 6
("backward, head dim 128"; the paper gives the backward pass without causal mask only). The paper counts the
backward pass as 2.5 times the forward FLOPs, so one training pass of the attention core (forward and backward)
runs at

    rate = 3.5 / (1 / forward + 2.5 / backward)

FlashAttention-2 is the reference (ratio 1): the fitted ``attention_rate_factor`` is its rate over the
large-GEMM rate, and a scenario that states no implementation (``training.attention_kernel``, default
``flash2``) is priced as before. The paper measures Hopper only. On Blackwell the same ratio is used (an
assumption: Transformer Engine prefers cuDNN on every compute capability from 9.0). On any other accelerator
(Ampere, where Transformer Engine prefers FlashAttention, an AMD GPU or a custom one) no benchmark gives a
ratio and every implementation is priced as FlashAttention-2 (ratio 1). FlashAttention-3 runs on Hopper only
(its README: "Requirements: H100 / H800 GPU"); a scenario that states it on another accelerator is refused.

Example: cuDNN, 529 forward and 518 backward TFLOPS, trains at 521 TFLOPS; FlashAttention-2 (333, 318) at
322: a ratio of 1.62. FlashAttention-3 (602, 559) at 571: 1.77.

One generation within a family differs in its attention core alone: Blackwell Ultra (GB300) doubles the
special-function units' exponential throughput (NVIDIA technical blog, "Making Softmax More Efficient with
NVIDIA Blackwell Ultra", 2026) at GB200's tensor-core rates, and the softmax is what a Blackwell attention
kernel waits on. Its measured gain: cuDNN's SDPA training benchmarks (NVIDIA/cudnn-frontend
``benchmark/sdpa_benchmark_training/results/llama3.1/{gb200,gb300}/*.csv`` at fb682ce, 2026-04-29; cuDNN 9.22,
BF16, Llama 3.1 shape: 64 query and 8 key-value heads of 128, batch 2, causal, non-deterministic backward) at
8k tokens run forward in 1.397 and 1.185 ms and backward in 4.127 and 3.832 ms on GB200 and GB300: a training
pass 5.524 / 5.017 = 1.10 times as fast (1.12-1.13 at 2k-4k and 16k, 1.21 at 32k). ``GENERATION_MS`` holds
those times; ``generation_ratio`` multiplies the family's kernel ratio by it (every implementation: the gain is
the hardware's), with fused attention.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from solvers.catalog.accelerators import catalog_key

__all__ = [
    "ATTENTION_KERNELS",
    "BENCHMARKED_FAMILIES",
    "GENERATION_MS",
    "KERNEL_FAMILIES",
    "KERNEL_TFLOPS",
    "REFERENCE_KERNEL",
    "attention_kernel_ratio",
    "generation_ratio",
    "training_tflops",
]

REFERENCE_KERNEL: Final = "flash2"

# implementation -> (forward TFLOPS with causal mask, backward TFLOPS), H100 SXM5, BF16, head dim 128, seq 8k:
# arXiv:2407.08608 Figure 5(d) and Figure 6, bar labels.
KERNEL_TFLOPS: Final = MappingProxyType(
    {
        "flash2": (333.0, 318.0),  # FlashAttention-2 (2.5.8)
        "cudnn": (529.0, 518.0),  # cuDNN 9.1 fused attention (Transformer Engine's FusedAttention)
        "flash3": (602.0, 559.0),  # FlashAttention-3
    }
)

ATTENTION_KERNELS: Final = tuple(KERNEL_TFLOPS)

# Accelerator families (solvers.catalog.fitted.FAMILY) on which the ratios apply: Hopper, measured; Blackwell,
# assumed (module docstring). Elsewhere the ratio is 1.
BENCHMARKED_FAMILIES: Final = ("hopper", "blackwell")

# The families each implementation runs on, where it is narrower than every GPU (FlashAttention-3: sm90 only).
KERNEL_FAMILIES: Final = MappingProxyType({"flash3": ("hopper",)})

# accelerator catalog key -> (the accelerator it is measured against, its (forward, backward) ms, this one's):
# cuDNN SDPA training benchmarks at 8k tokens (module docstring).
GENERATION_MS: Final = MappingProxyType({"gb300": ("gb200", (1.397, 4.127), (1.185, 3.832))})

# The paper's FLOP count: the backward pass is 2.5 times the forward (5 matmuls against 2).
_BACKWARD_FLOPS = 2.5


def training_tflops(kernel: str) -> float:
    """The forward-and-backward rate of ``kernel`` (module docstring). Raises ``KeyError`` for an unknown one.

    Example: ``training_tflops("flash2")`` -> 322.1.
    """
    forward, backward = KERNEL_TFLOPS[kernel]
    return (1.0 + _BACKWARD_FLOPS) / (1.0 / forward + _BACKWARD_FLOPS / backward)


def attention_kernel_ratio(kernel: str, family: str | None) -> float:
    """``kernel``'s training rate over FlashAttention-2's on an accelerator of ``family``: the benchmark's ratio
    on ``BENCHMARKED_FAMILIES``, 1 elsewhere (no benchmark).

    Example: ``attention_kernel_ratio("cudnn", "hopper")`` -> 1.618; ``("cudnn", "ampere")`` -> 1.0;
    ``("flash2", "hopper")`` -> 1.0.
    """
    if family not in BENCHMARKED_FAMILIES:
        return 1.0
    return training_tflops(kernel) / training_tflops(REFERENCE_KERNEL)


def generation_ratio(accelerator: str) -> float:
    """The attention core's training rate on ``accelerator`` (a catalog key or display name) over the
    accelerator its benchmark compares it with (``GENERATION_MS``); 1 for every other one.

    Example: ``generation_ratio("gb300")`` -> 5.524 / 5.017 = 1.101; ``generation_ratio("gb200")`` -> 1.0.
    """
    entry = GENERATION_MS.get(catalog_key(accelerator))
    if entry is None:
        return 1.0
    _, reference, measured = entry
    return sum(reference) / sum(measured)
