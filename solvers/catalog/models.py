"""Model presets: transformer shapes and parameter counts, each with its source.

Fields follow ``model`` of the scenario document (CONTRACT.md): ``layers``, ``hidden``, ``ffn_hidden``,
``heads``, ``kv_heads``, ``head_dim`` (where a head is not ``hidden / heads`` wide), ``vocab``, ``params``
(total, all experts), ``active_params`` (per token; MoE only), ``gated_mlp`` (SwiGLU: three FFN matrices),
``dropout`` (false when the model trains without dropout; true, the Korthikanti et al. count, when unstated),
``moe``, ``mla`` (Multi-head Latent Attention) and ``seq_len`` (the context length the model was pre-trained at,
used as the default ``training.seq_len``).

The Megatron-LM SC'21 family (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC'21, Table 1) all use vocabulary 51,200 and sequence length 2,048 with a 4h GELU MLP.
"""

from __future__ import annotations

from typing import Any

_SC21 = "Narayanan et al., SC'21 (Megatron-LM PTD-P), Table 1"
_LLAMA3_NO_DROPOUT = (
    "Meta Llama 3 reference code (github.com/meta-llama/llama3, llama/model.py): a TransformerBlock is "
    "h = x + attention(norm(x)), out = h + feed_forward(norm(h)), with no dropout layer; so is the training "
    "model of torchtitan, PyTorch's Llama 3 pre-training library (torchtitan/models/llama3/model/model.py)"
)
_MEGATRON_DROPOUT = (
    "Megatron-LM's defaults, --attention-dropout 0.1 and --hidden-dropout 0.1 (megatron/arguments.py), in "
    "the framework of the published runs of this shape (SC'21, MegaScale); Korthikanti et al. 2022 count "
    "these dropout masks on the same GPT models"
)
_QWEN3 = "Qwen3 Technical Report (Yang et al., arXiv:2505.09388, 2025)"


def _qwen3_moe(
    size: str, layers: int, hidden: int, ffn: int, heads: int, expert_ffn: int, params: float, active: float
) -> dict[str, Any]:
    """A Qwen3 mixture-of-experts model: 128 experts, 8 routed per token, no shared expert, every layer MoE,
    4 key/value heads, heads of 128, vocabulary 151,936, untied embeddings, SwiGLU (the released configs)."""
    return {
        "name": f"Qwen3-{size}",
        "layers": layers,
        "hidden": hidden,
        "ffn_hidden": ffn,
        "heads": heads,
        "kv_heads": 4,
        "head_dim": 128,
        "vocab": 151_936,
        "params": params,
        "active_params": active,
        "gated_mlp": True,
        "tied_embeddings": False,
        "dropout": True,
        "moe": {
            "experts": 128,
            "top_k": 8,
            "expert_ffn_hidden": expert_ffn,
            "shared_experts": 0,
            "moe_layers": layers,
        },
        "seq_len": 4096,
        "sources": {
            "shape": f"{_QWEN3}, Table 2 (Qwen3-{size}: {layers} layers, {heads} query and 4 key/value heads, 128 "
            f"experts of which 8 activated); the released config.json (huggingface.co/Qwen/Qwen3-{size}): "
            f"hidden_size {hidden:,}, intermediate_size {ffn:,}, moe_intermediate_size {expert_ffn:,}, vocab_size "
            "151,936, tie_word_embeddings false",
            "head_dim": f"the released config.json (huggingface.co/Qwen/Qwen3-{size}): head_dim 128, so the "
            f"query heads span {heads * 128:,} against hidden {hidden:,} (Megatron-Core's kv_channels 128 in "
            "THUDM/slime scripts/models)",
            "params": f"the model card (huggingface.co/Qwen/Qwen3-{size}): {params / 1e9:g}B in total and "
            f"{active / 1e9:g}B activated",
            "seq_len": f"{_QWEN3}, pre-training stages: the general stage (S1), over 30T tokens at a sequence "
            "length of 4,096",
            "dropout": "not stated by the authors, whose training code is not public (the released config's "
            "attention_dropout 0.0 is a fine-tuning setting): Korthikanti et al.'s count with dropout masks, the "
            "conservative default, is kept",
        },
    }


_UNSTATED_DROPOUT = (
    "not stated by the authors, whose training code is not public (their inference code has no dropout, as no "
    "inference code does): Korthikanti et al.'s count with dropout masks, the conservative default, is kept"
)


# Megatron-LM's GPT computes its logits with the input embedding's matrix (``parallel_lm_logits`` on
# ``word_embeddings_weight``; ``--untie-embeddings-and-output-weights`` came later and is off by default).
_MEGATRON_TIED = (
    "Narayanan et al., SC'21 (Megatron-LM PTD-P) §5.1 counts P = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)): "
    "the vocabulary matrix once, as Megatron-LM's GPT shares it between the input embedding and the output layer"
)


def _sc21(params_b: float, heads: int, hidden: int, layers: int) -> dict[str, Any]:
    return {
        "name": f"Megatron-LM GPT {params_b:g}B (SC'21 Table 1)",
        "layers": layers,
        "hidden": hidden,
        "ffn_hidden": 4 * hidden,
        "heads": heads,
        "kv_heads": heads,
        "vocab": 51_200,
        "params": params_b * 1e9,
        "gated_mlp": False,
        "tied_embeddings": True,
        "dropout": True,
        "seq_len": 2048,
        "sources": {
            "shape": f"{_SC21}: {params_b:g}B, {heads} heads, hidden {hidden}, {layers} layers; 4h MLP",
            "vocab": f"{_SC21} text: vocabulary 51,200, sequence length 2,048",
            "params": f"{_SC21}: {params_b:g} billion parameters",
            "tied_embeddings": _MEGATRON_TIED,
            "dropout": _MEGATRON_DROPOUT,
        },
    }


MODELS: dict[str, dict[str, Any]] = {
    "gpt3-175b": {
        "name": "GPT-3 175B",
        "layers": 96,
        "hidden": 12_288,
        "ffn_hidden": 49_152,
        "heads": 96,
        "kv_heads": 96,
        "vocab": 50_257,
        "params": 175e9,
        "gated_mlp": False,
        "dropout": True,
        "seq_len": 2048,
        "sources": {
            "shape": "Brown et al., 'Language Models are Few-Shot Learners' (2020), Table 2.1: 96 layers, "
            "d_model 12,288, 96 heads, d_ff = 4 d_model, context 2,048",
            "vocab": "GPT-2 BPE vocabulary, 50,257 tokens (Radford et al. 2019)",
            "params": "Brown et al. 2020, Table 2.1: 175.0B",
            "dropout": _MEGATRON_DROPOUT,
        },
    },
    "llama3-8b": {
        "name": "Llama 3 8B",
        "layers": 32,
        "hidden": 4096,
        "ffn_hidden": 14_336,
        "heads": 32,
        "kv_heads": 8,
        "vocab": 128_256,
        "params": 8.03e9,
        "gated_mlp": True,
        "seq_len": 8192,
        "dropout": False,
        "sources": {
            "dropout": _LLAMA3_NO_DROPOUT,
            "shape": "Dubey et al., 'The Llama 3 Herd of Models' (2024), Table 3: 32 layers, model 4,096, "
            "FFN 14,336, 32 heads, 8 KV heads, vocabulary 128,000 (tokenizer 128,256)",
            "params": "Meta Llama 3.1 8B model card: 8.03B parameters",
            "seq_len": "Llama 3 §3.4.1: pre-training at 8K context",
        },
    },
    "llama3-70b": {
        "name": "Llama 3 70B",
        "layers": 80,
        "hidden": 8192,
        "ffn_hidden": 28_672,
        "heads": 64,
        "kv_heads": 8,
        "vocab": 128_256,
        "params": 70.6e9,
        "gated_mlp": True,
        "seq_len": 8192,
        "dropout": False,
        "sources": {
            "dropout": _LLAMA3_NO_DROPOUT,
            "shape": "Dubey et al. 2024, Table 3: 80 layers, model 8,192, FFN 28,672, 64 heads, 8 KV heads",
            "params": "Meta Llama 3.1 70B model card: 70.6B parameters (seed 000 uses 70.6B)",
            "seq_len": "Llama 3 §3.4.1: pre-training at 8K context",
        },
    },
    "llama3-405b": {
        "name": "Llama 3 405B",
        "layers": 126,
        "hidden": 16_384,
        "ffn_hidden": 53_248,
        "heads": 128,
        "kv_heads": 8,
        "vocab": 128_256,
        "params": 405e9,
        "gated_mlp": True,
        "seq_len": 8192,
        "dropout": False,
        "sources": {
            "dropout": _LLAMA3_NO_DROPOUT,
            "shape": "Dubey et al. 2024, Table 3: 126 layers, model 16,384, FFN 53,248, 128 heads, 8 KV heads",
            "params": "Dubey et al. 2024, Table 3: 405B",
            "seq_len": "Llama 3 §3.4.1 and Table 4: 8,192 tokens in the main pre-training stage",
        },
    },
    "mixtral-8x7b": {
        "name": "Mixtral 8x7B",
        "layers": 32,
        "hidden": 4096,
        "ffn_hidden": 14_336,
        "heads": 32,
        "kv_heads": 8,
        "vocab": 32_000,
        "params": 46.7e9,
        "active_params": 12.9e9,
        "gated_mlp": True,
        "dropout": True,
        "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 14_336, "shared_experts": 0, "moe_layers": 32},
        "seq_len": 4096,
        "sources": {
            "shape": "Jiang et al., 'Mixtral of Experts' (2024), Table 1: dim 4,096, 32 layers, hidden_dim "
            "14,336, 32 heads, 8 KV heads, vocab 32,000, 8 experts, top-2",
            "params": "Jiang et al. 2024 §2: 47B total, 13B active parameters (46.7B / 12.9B in the model "
            "card)",
            "seq_len": "estimate: 4,096-token training sequences; the model supports a 32K context",
            "dropout": _UNSTATED_DROPOUT,
        },
    },
    "deepseek-v3": {
        "name": "DeepSeek-V3 (671B MoE)",
        "layers": 61,
        "hidden": 7168,
        "ffn_hidden": 18_432,
        "heads": 128,
        "kv_heads": 128,
        "vocab": 129_280,
        "params": 671e9,
        "active_params": 37e9,
        "gated_mlp": True,
        "dropout": True,
        "moe": {
            "experts": 256,
            "top_k": 8,
            "expert_ffn_hidden": 2048,
            "shared_experts": 1,
            "moe_layers": 58,
            "max_nodes_per_token": 4,
        },
        "mtp_layers": 1,
        "mla": {
            "q_lora_rank": 1536,
            "kv_lora_rank": 512,
            "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64,
            "v_head_dim": 128,
        },
        "seq_len": 4096,
        "sources": {
            "shape": "DeepSeek-V3 technical report (2024) §4.2: 61 layers, hidden 7,168, 128 heads (MLA), "
            "first 3 layers dense (FFN 18,432), 1 shared + 256 routed experts of width 2,048, top-8, each token "
            "sent to at most 4 nodes (§4.2; node-limited routing, §2.1.2)",
            "vocab": "DeepSeek-V3 technical report §4.1: byte-level BPE, 128K vocabulary (129,280 in the "
            "released config)",
            "mla": "DeepSeek-V3 technical report §2.1.1 and §4.2: Multi-head Latent Attention, query latent "
            "1,536, key/value latent 512, per-head query/key 128 + 64 (rotary), value 128 (q_lora_rank, "
            "kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim in the released "
            "inference/configs/config_671B.json)",
            "params": "DeepSeek-V3 technical report §1: 671B total, 37B activated per token (the main model; "
            "the multi-token-prediction module comes on top: model.mtp_layers)",
            "mtp_layers": "DeepSeek-V3 technical report §2.2 and §4.2: multi-token prediction of depth D = 1 in "
            "pre-training (one module: RMSNorms, a 2h x h projection and one transformer block, with the "
            "embedding and output head shared with the main model); the released checkpoint's 14B MTP weights "
            "also hold copies of the embedding and head (README: 671B main model + 14B MTP module)",
            "seq_len": "DeepSeek-V3 technical report §4.2: maximum sequence length 4K in pre-training",
            "dropout": _UNSTATED_DROPOUT,
        },
    },
    "qwen3-30b-a3b": _qwen3_moe("30B-A3B", 48, 2048, 6144, 32, 768, 30.5e9, 3.3e9),
    "qwen3-235b-a22b": _qwen3_moe("235B-A22B", 94, 4096, 12_288, 64, 1536, 235e9, 22e9),
    "megatron-530b": {
        "name": "Megatron-Turing NLG 530B",
        "layers": 105,
        "hidden": 20_480,
        "ffn_hidden": 81_920,
        "heads": 128,
        "kv_heads": 128,
        "vocab": 51_200,
        "params": 530e9,
        "gated_mlp": False,
        "tied_embeddings": True,
        "dropout": True,
        "seq_len": 2048,
        "sources": {
            "shape": "Smith et al., 'Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B' (2022) "
            "§3.1: 105 layers, hidden 20,480, 128 heads, sequence 2,048; also SC'21 Table 1 (529.6B row)",
            "vocab": f"{_SC21} text: vocabulary 51,200",
            "params": "Smith et al. 2022: 530 billion parameters",
            "tied_embeddings": "trained with Megatron-DeepSpeed, whose GPT shares the input embedding with the "
            "output layer; SC'21 Table 1's 529.6B row counts the vocabulary matrix once",
            "dropout": "trained with Megatron-DeepSpeed, whose defaults are --attention-dropout 0.1 and "
            "--hidden-dropout 0.1 (megatron/arguments.py); Smith et al. 2022 set no other value",
        },
    },
    "megatron-1t": _sc21(1008.0, 160, 25_600, 128),
    "megatron-1.7b": _sc21(1.7, 24, 2304, 24),
    "megatron-3.6b": _sc21(3.6, 32, 3072, 30),
    "megatron-7.5b": _sc21(7.5, 32, 4096, 36),
    "megatron-18.4b": _sc21(18.4, 48, 6144, 40),
    "megatron-39.1b": _sc21(39.1, 64, 8192, 48),
    "megatron-76.1b": _sc21(76.1, 80, 10_240, 60),
    "megatron-145.6b": _sc21(145.6, 96, 12_288, 80),
    "megatron-310.1b": _sc21(310.1, 128, 16_384, 96),
    "bloom-176b": {
        "name": "BLOOM 176B",
        "layers": 70,
        "hidden": 14_336,
        "ffn_hidden": 57_344,
        "heads": 112,
        "kv_heads": 112,
        "vocab": 250_880,
        "params": 176.2e9,
        "gated_mlp": False,
        "tied_embeddings": True,
        "dropout": True,
        "seq_len": 2048,
        "sources": {
            "shape": "BigScience, 'BLOOM: A 176B-Parameter Open-Access Multilingual Language Model' (2022), "
            "Table 3: 70 layers, hidden 14,336, 112 heads, sequence 2,048; 4h GELU MLP",
            "vocab": "BLOOM paper §3.3: 250,680 tokens, padded to 250,880 in the released config",
            "params": "BLOOM paper Table 3: 176,247M parameters",
            "tied_embeddings": "Megatron-DeepSpeed's GPT shares the input embedding with the output layer, as "
            "the released BloomForCausalLM ties lm_head to word_embeddings; Table 3's 176,247M counts the "
            "250,880 x 14,336 matrix once",
            "dropout": "BigScience's launch script (bigscience-workshop/bigscience, "
            "train/tr11-176B-ml/tr11-176B-ml.slurm) passes no dropout flag, so Megatron-DeepSpeed's "
            "defaults applied: --attention-dropout 0.1, --hidden-dropout 0.1 (megatron/arguments.py)",
        },
    },
    "opt-175b": {
        "name": "OPT-175B",
        "layers": 96,
        "hidden": 12_288,
        "ffn_hidden": 49_152,
        "heads": 96,
        "kv_heads": 96,
        "vocab": 50_272,
        "params": 175e9,
        "gated_mlp": False,
        "dropout": True,
        "seq_len": 2048,
        "sources": {
            "shape": "Zhang et al., 'OPT: Open Pre-trained Transformer Language Models' (2022), Table 1: 96 "
            "layers, 96 heads, embedding 12,288; context 2,048",
            "vocab": "OPT released config: vocabulary 50,272 (GPT-2 BPE, padded)",
            "params": "Zhang et al. 2022, Table 1: 175B",
            "dropout": "Zhang et al. 2022 §2.2: a dropout of 0.1 throughout, none on the embeddings",
        },
    },
}
