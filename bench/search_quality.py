"""How well search finds the question a learner means, on the real bank, PostgreSQL and SQLite.

    .venv/bin/python bench/search_quality.py [-v] [--without SET ...]
        [--database-url postgres://postgres@127.0.0.1:5432/quizbank_search_quality]

Loads fixtures/bank (load_bank) into a scratch PostgreSQL database (created, then dropped) and into
a temporary SQLite file, runs every query below through `quizbank.search.question_search` (what the
API and the list page use), and prints top-1, top-5 and MRR over the labelled queries and the share
of off-topic queries that find anything, for the main set below and for the sets written apart
from it (QUERY_SETS). A query is labelled with every slug that answers it; the first of them in
the results counts. Queries whose slugs are not in the bank yet are skipped and counted. `-v`
lists the misses (never the sealed set's). quizbank/tests/test_search_quality.py keeps the
figures up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The learner's words, as typed or pasted: short keyword queries, interview questions, abbreviations
# and misspellings. Each with the slugs that answer it.
QUERIES: list[tuple[str, list[str]]] = [
    # Short keyword queries
    ("activation functions", ["activation-functions"]),
    ("relu vs gelu vs sigmoid", ["activation-functions"]),
    (
        "scaled dot product attention from scratch",
        ["attention-from-scratch", "scaled-dot-product-attention"],
    ),
    ("attention masking", ["attention-from-scratch", "scaled-dot-product-attention"]),
    ("torch.autograd.grad create_graph", ["autograd-grad-function", "higher-order-gradients"]),
    ("how does autograd work", ["autograd-how-it-works", "autograd-internals"]),
    ("grad_fn retain_graph version counter", ["autograd-internals"]),
    ("backpropagation", ["backpropagation"]),
    ("loss.backward vs optimizer.step", ["backward-vs-step"]),
    ("batchnorm running statistics", ["batch-normalization"]),
    ("broadcasting rules", ["broadcasting"]),
    ("register_buffer vs nn.Parameter", ["buffers-vs-parameters"]),
    ("buffers and parameters", ["buffers-vs-parameters"]),
    ("steps to build and train a model", ["build-model-steps", "training-loop"]),
    ("next token loss with padding", ["causal-lm-loss"]),
    ("causal language model loss", ["causal-lm-loss"]),
    ("CrossEntropyLoss vs BCEWithLogitsLoss", ["ce-vs-bce-with-logits"]),
    ("resume training from checkpoint", ["checkpointing-resume"]),
    ("save optimizer and scheduler state to resume", ["checkpointing-resume"]),
    ("conv2d output shape", ["cnn-conv2d"]),
    ("build a small CNN", ["cnn-conv2d"]),
    ("common pytorch mistakes", ["common-pitfalls"]),
    ("strides and contiguous tensors", ["contiguous-memory-layout"]),
    ("channels_last memory format", ["contiguous-memory-layout"]),
    ("cpu vs gpu tensors", ["cpu-vs-gpu-tensors"]),
    ("convert python list to tensor", ["create-tensor-from-list"]),
    ("what is cuda", ["cuda-and-pytorch"]),
    ("torch.cuda.empty_cache", ["cuda-empty-cache"]),
    ("CUDA out of memory error", ["cuda-oom-debugging", "memory-management"]),
    ("custom autograd function backward", ["custom-autograd-function"]),
    ("gradcheck", ["custom-autograd-function"]),
    ("collate_fn pad variable length sequences", ["custom-collate-fn"]),
    ("custom Dataset class", ["custom-dataset"]),
    ("focal loss custom loss function", ["custom-loss-function"]),
    ("image dataset torchvision ImageFolder", ["data-loading-preprocessing"]),
    ("DataParallel vs DistributedDataParallel", ["dataparallel-vs-ddp"]),
    ("Dataset vs DataLoader", ["dataset-and-dataloader"]),
    ("dataloader workers same random augmentation", ["debug-dataloader-worker-seeding"]),
    ("worker_init_fn seed", ["debug-dataloader-worker-seeding"]),
    ("modified by an inplace operation", ["debug-inplace-autograd-error"]),
    ("loss not decreasing", ["debug-loss-not-decreasing", "debug-model-not-learning"]),
    ("memory leak in training loop", ["debug-memory-growth-in-loop"]),
    ("loss becomes nan", ["debug-nan-loss", "debug-model-not-learning"]),
    ("silent broadcasting bug regression", ["debug-silent-broadcasting"]),
    ("beam search vs greedy decoding", ["decoding-strategies"]),
    ("detach vs item", ["detach-vs-item"]),
    ("detach vs requires_grad=False", ["detach-vs-requires-grad-false"]),
    ("expected all tensors to be on the same device", ["device-mismatch-errors"]),
    ("choose between several GPUs torch.device", ["device-types-multi-gpu"]),
    ("CUDA_VISIBLE_DEVICES", ["device-types-multi-gpu"]),
    ("dropout", ["dropout"]),
    ("dynamic computation graph", ["dynamic-computation-graph"]),
    ("define by run", ["dynamic-computation-graph"]),
    ("early stopping", ["early-stopping"]),
    ("element-wise product vs matrix multiplication", ["elementwise-and-matmul"]),
    ("torch.matmul vs torch.mul", ["elementwise-and-matmul"]),
    ("evaluate a model and run inference", ["evaluation-and-inference"]),
    ("fine-tune pretrained model new head", ["fine-tuning", "transfer-learning"]),
    ("forward method", ["forward-method"]),
    ("freeze layers", ["freeze-layers"]),
    ("GAN generator discriminator", ["gan-generator-discriminator"]),
    (".grad attribute", ["grad-attribute"]),
    ("gradient accumulation", ["gradient-accumulation"]),
    ("gradient checkpointing", ["gradient-checkpointing"]),
    ("gradient clipping", ["gradient-clipping"]),
    ("clip_grad_norm_", ["gradient-clipping"]),
    ("hessian vector product", ["higher-order-gradients"]),
    ("gradient penalty wgan", ["higher-order-gradients"]),
    ("forward hooks", ["hooks"]),
    ("register_forward_hook activations", ["hooks"]),
    ("imbalanced dataset", ["imbalanced-datasets"]),
    ("in-place operations", ["inplace-vs-out-of-place"]),
    ("torch.jit.save vs torch.save", ["jit-save-vs-save"]),
    ("kv cache", ["kv-cache-decoding"]),
    ("LayerNorm vs RMSNorm", ["layernorm-and-rmsnorm"]),
    ("LoRA adapter", ["lora-adapter"]),
    ("loss functions", ["loss-functions"]),
    ("learning rate scheduler", ["lr-schedulers", "warmup-cosine-schedule"]),
    ("manual gradients with backward", ["manual-gradients"]),
    ("reduce GPU memory usage", ["memory-management", "cuda-oom-debugging"]),
    ("mini-batch gradient descent", ["mini-batch-gradient-descent"]),
    ("mixed precision training", ["mixed-precision-amp"]),
    ("autocast GradScaler", ["mixed-precision-amp"]),
    ("mixture of experts routing", ["mixture-of-experts-routing"]),
    ("model.eval() vs torch.no_grad()", ["model-eval-vs-no-grad"]),
    ("nn.functional vs nn layers", ["module-vs-functional"]),
    ("track training metrics", ["monitoring-training-metrics"]),
    ("move model to gpu", ["move-to-gpu"]),
    ("device agnostic code", ["move-to-gpu"]),
    ("multi-head attention", ["multi-head-attention-from-scratch"]),
    ("nn.Module", ["nn-module"]),
    ("parametrize", ["nn-parametrizations"]),
    ("no_grad vs inference_mode", ["no-grad"]),
    ("numpy interop", ["numpy-interop", "tensor-vs-numpy"]),
    ("online softmax flash attention", ["online-softmax-attention"]),
    ("export to onnx", ["onnx-export"]),
    ("open source contribution", ["open-source-community"]),
    ("optimizer parameter groups", ["optimizers", "weight-decay-param-groups", "fine-tuning"]),
    ("prevent overfitting", ["overfitting-prevention"]),
    ("per-sample gradients", ["per-sample-gradients-torch-func"]),
    ("what is pytorch", ["pytorch-overview"]),
    ("pytorch pros and cons", ["pytorch-pros-cons"]),
    ("pytorch vs tensorflow", ["pytorch-vs-tensorflow"]),
    ("int8 quantization", ["quantization"]),
    ("reinforcement learning", ["reinforcement-learning"]),
    ("reproducibility", ["reproducibility-determinism"]),
    ("requires_grad", ["requires-grad"]),
    ("ring all-reduce", ["ring-all-reduce"]),
    ("LSTM and GRU", ["rnn-lstm-gru"]),
    ("rotary position embeddings", ["rotary-position-embedding"]),
    ("top-p sampling", ["sampling-temperature-top-k-top-p"]),
    ("save and load model", ["save-load-models", "state-dict-vs-whole-model"]),
    ("nn.Sequential vs custom module", ["sequential-vs-module"]),
    ("SGD vs Adam", ["sgd-vs-adam"]),
    ("tensor shape size dim", ["shape-size-dim"]),
    ("binary classifier single layer", ["single-layer-binary-classifier"]),
    ("sparse tensors", ["sparse-tensors"]),
    ("numerically stable softmax", ["stable-softmax-cross-entropy", "online-softmax-attention"]),
    ("label smoothing", ["stable-softmax-cross-entropy"]),
    ("state_dict or whole model", ["state-dict-vs-whole-model"]),
    ("torch.zeros torch.ones torch.arange", ["tensor-creation-functions"]),
    ("torch.tensor vs torch.Tensor", ["tensor-function-vs-constructor"]),
    ("tensor vs numpy array", ["tensor-vs-numpy", "numpy-interop"]),
    ("Variable", ["tensor-vs-variable"]),
    ("tensorboard", ["tensorboard"]),
    ("torch.compile graph breaks", ["torch-compile"]),
    ("torchscript tracing vs scripting", ["torchscript"]),
    ("torchvision", ["torchvision-library", "torchvision-transforms"]),
    ("transforms.v2", ["torchvision-transforms"]),
    ("model.train vs model.eval", ["train-vs-eval-mode"]),
    ("training loop", ["training-loop"]),
    ("transfer learning", ["transfer-learning", "fine-tuning"]),
    ("transformer encoder layer", ["transformer-encoder-layer"]),
    ("pack_padded_sequence", ["variable-length-sequences"]),
    ("view vs reshape", ["view-vs-reshape"]),
    ("permute transpose", ["view-vs-reshape"]),
    ("warmup cosine schedule", ["warmup-cosine-schedule", "lr-schedulers"]),
    ("AdamW no weight decay on bias", ["weight-decay-param-groups"]),
    ("weight initialization", ["weight-initialization"]),
    ("share weights between layers", ["weight-sharing", "weight-tying-embeddings"]),
    ("tie embedding and output projection", ["weight-tying-embeddings"]),
    ("what is a tensor", ["what-is-a-tensor"]),
    ("zero_grad", ["zero-grad"]),
    ("EMA of model weights", ["ema-of-weights"]),
    # Long questions as an interviewer asks them
    ("Difference between model.train() and model.eval()", ["train-vs-eval-mode"]),
    ("Explain weight initialization. Why is it important?", ["weight-initialization"]),
    ("Difference between optimizer.step() and loss.backward()", ["backward-vs-step"]),
    ("Explain nn.Module. Why do we inherit from it to create custom networks?", ["nn-module"]),
    (
        "What is a tensor and how is it different from a NumPy array?",
        ["tensor-vs-numpy", "what-is-a-tensor"],
    ),
    ("Why do we need to call optimizer.zero_grad() in every iteration?", ["zero-grad"]),
    ("How would you train a model on multiple GPUs?", ["dataparallel-vs-ddp"]),
    (
        "Explain the difference between a Dataset and a DataLoader in PyTorch.",
        ["dataset-and-dataloader"],
    ),
    (
        "How do you save and load a trained model in PyTorch?",
        ["save-load-models", "state-dict-vs-whole-model"],
    ),
    ("What is autograd and how does it compute gradients?", ["autograd-how-it-works"]),
    (
        "What happens if you forget to call model.eval() before inference?",
        ["train-vs-eval-mode", "model-eval-vs-no-grad", "evaluation-and-inference"],
    ),
    ("What is the purpose of torch.no_grad()?", ["no-grad", "model-eval-vs-no-grad"]),
    ("How do you move a model and data to the GPU?", ["move-to-gpu"]),
    ("What is the difference between view() and reshape()?", ["view-vs-reshape"]),
    ("Explain how dropout works and why it is turned off at test time.", ["dropout"]),
    (
        "How does batch normalization behave differently during training and evaluation?",
        ["batch-normalization"],
    ),
    (
        "How would you handle a CUDA out of memory error during training?",
        ["cuda-oom-debugging", "memory-management"],
    ),
    ("What is gradient clipping and when would you use it?", ["gradient-clipping"]),
    ("How do you implement a custom loss function in PyTorch?", ["custom-loss-function"]),
    ("How do you write a custom dataset class?", ["custom-dataset"]),
    (
        "Explain the difference between DataParallel and DistributedDataParallel.",
        ["dataparallel-vs-ddp"],
    ),
    (
        "What is transfer learning and how do you do it in PyTorch?",
        ["transfer-learning", "fine-tuning"],
    ),
    ("How do you freeze the layers of a pretrained network?", ["freeze-layers"]),
    ("What is mixed precision training and why does it speed things up?", ["mixed-precision-amp"]),
    (
        "What is the difference between torch.tensor and torch.Tensor?",
        ["tensor-function-vs-constructor"],
    ),
    ("What does requires_grad do?", ["requires-grad"]),
    (
        "Why is the forward method called through model(x) and not model.forward(x)?",
        ["forward-method"],
    ),
    ("What is a learning rate scheduler and how do you use one?", ["lr-schedulers"]),
    ("How do you make your training results reproducible?", ["reproducibility-determinism"]),
    (
        "Why does my loss become NaN after a few hundred steps?",
        ["debug-nan-loss", "debug-model-not-learning"],
    ),
    (
        "My model is not learning, the loss stays flat. How would you debug it?",
        ["debug-model-not-learning", "debug-loss-not-decreasing"],
    ),
    ("What is the difference between detach() and item()?", ["detach-vs-item"]),
    ("How do you deal with class imbalance in a classification problem?", ["imbalanced-datasets"]),
    ("Explain the difference between SGD and Adam optimizers.", ["sgd-vs-adam"]),
    ("What are hooks in PyTorch and when would you use them?", ["hooks"]),
    ("How do you export a PyTorch model to ONNX?", ["onnx-export"]),
    ("What is TorchScript?", ["torchscript"]),
    (
        "What are the advantages of PyTorch over TensorFlow?",
        ["pytorch-vs-tensorflow", "pytorch-pros-cons"],
    ),
    ("How does broadcasting work in PyTorch?", ["broadcasting"]),
    ("Explain what a dynamic computational graph is.", ["dynamic-computation-graph"]),
    ("How do you implement early stopping?", ["early-stopping"]),
    ("What is gradient accumulation and why would you use it?", ["gradient-accumulation"]),
    ("What is the state_dict of a model?", ["state-dict-vs-whole-model", "save-load-models"]),
    ("How do you write a basic training loop in PyTorch?", ["training-loop"]),
    ("Implement multi-head self-attention from scratch.", ["multi-head-attention-from-scratch"]),
    ("How do you handle variable length sequences in an RNN?", ["variable-length-sequences"]),
    (
        "What are in-place operations and why can they break autograd?",
        ["inplace-vs-out-of-place", "debug-inplace-autograd-error"],
    ),
    ("How do you check the shape of a tensor?", ["shape-size-dim"]),
    ("What does torch.cuda.empty_cache() do and does it free memory?", ["cuda-empty-cache"]),
    (
        "When would you use nn.Sequential instead of subclassing nn.Module?",
        ["sequential-vs-module"],
    ),
    (
        "How do you share memory between a NumPy array and a tensor?",
        ["numpy-interop", "tensor-vs-numpy"],
    ),
    ("How does the KV cache speed up transformer inference?", ["kv-cache-decoding"]),
    ("Describe how LoRA fine-tuning works.", ["lora-adapter"]),
    ("What is quantization and how does it make models smaller?", ["quantization"]),
    ("How do you use torch.compile to speed up a model?", ["torch-compile"]),
    ("How do you log metrics to TensorBoard?", ["tensorboard"]),
    ("What was Variable in old PyTorch versions?", ["tensor-vs-variable"]),
    ("What is the difference between CrossEntropyLoss and NLLLoss?", ["loss-functions"]),
    ("What is the difference between nn.ReLU and F.relu?", ["module-vs-functional"]),
    (
        "How do you apply Kaiming initialization to all layers of a model?",
        ["weight-initialization"],
    ),
    ("What is a Parameter and how is it different from a buffer?", ["buffers-vs-parameters"]),
    (
        "Why does PyTorch accumulate gradients by default?",
        ["zero-grad", "grad-attribute", "gradient-accumulation"],
    ),
    (
        "How do you compute second derivatives in PyTorch?",
        ["higher-order-gradients", "autograd-grad-function"],
    ),
    (
        "How would you debug a memory leak where GPU memory keeps growing every iteration?",
        ["debug-memory-growth-in-loop"],
    ),
    (
        "Explain the vanishing gradient problem and how activation functions help.",
        ["activation-functions"],
    ),
    (
        "How do you tie the input embedding to the output layer of a language model?",
        ["weight-tying-embeddings"],
    ),
    ("How does top-k sampling work for text generation?", ["sampling-temperature-top-k-top-p"]),
    ("How does a ring all-reduce work in distributed training?", ["ring-all-reduce"]),
    ("What does a torch.optim optimizer keep as state?", ["optimizers"]),
    (
        "How do you use pretrained models from torchvision?",
        ["torchvision-library", "transfer-learning"],
    ),
    # Abbreviations
    ("multi gpu training", ["dataparallel-vs-ddp"]),
    ("ddp", ["dataparallel-vs-ddp"]),
    ("OOM", ["cuda-oom-debugging", "memory-management"]),
    ("out of memory on GPU", ["cuda-oom-debugging", "memory-management"]),
    ("AMP training", ["mixed-precision-amp"]),
    ("fp16 training", ["mixed-precision-amp"]),
    ("LR warmup", ["warmup-cosine-schedule", "lr-schedulers"]),
    ("LR scheduler", ["lr-schedulers", "warmup-cosine-schedule"]),
    ("BN train vs eval", ["batch-normalization", "train-vs-eval-mode"]),
    ("finetune a resnet", ["transfer-learning", "fine-tuning"]),
    ("MoE", ["mixture-of-experts-routing"]),
    ("RoPE", ["rotary-position-embedding"]),
    ("SDPA", ["scaled-dot-product-attention"]),
    ("BCE loss", ["ce-vs-bce-with-logits", "loss-functions"]),
    ("RL policy gradient", ["reinforcement-learning"]),
    ("CNN", ["cnn-conv2d"]),
    ("LSTM", ["rnn-lstm-gru"]),
    ("GAN", ["gan-generator-discriminator"]),
    ("TF vs PyTorch", ["pytorch-vs-tensorflow"]),
    ("DP-SGD per-sample grads", ["per-sample-gradients-torch-func"]),
    ("MHA from scratch", ["multi-head-attention-from-scratch"]),
    # Misspellings
    ("gradeint acumulation", ["gradient-accumulation"]),
    ("batchnorm vs layernrom", ["layernorm-and-rmsnorm", "batch-normalization"]),
    ("dataloder", ["dataset-and-dataloader"]),
    ("tensorbaord", ["tensorboard"]),
    ("brodcasting", ["broadcasting"]),
    ("quantisation", ["quantization"]),
    ("backpropogation", ["backpropagation"]),
    ("reproducability", ["reproducibility-determinism"]),
    ("initalization of weights", ["weight-initialization"]),
    ("torchscirpt", ["torchscript"]),
    ("droput", ["dropout"]),
    ("contigous tensor", ["contiguous-memory-layout"]),
    ("autograd.Fucntion", ["custom-autograd-function"]),
    ("optimzer zero grad", ["zero-grad"]),
    ("checkpionting", ["checkpointing-resume", "gradient-checkpointing"]),
]

OFF_TOPIC: list[str] = [
    "pizza recipe",
    "best pizza dough recipe",
    "weather forecast for tomorrow",
    "how to train my puppy to sit",
    "cheap flights to paris",
    "football world cup results",
    "how do I bake sourdough bread",
    "javascript promise async await",
    "learn to play guitar chords",
    "stock market prediction tips",
    "how to knit a scarf",
    "best hiking trails near me",
    "what is the capital of australia",
    "wedding dress shopping",
    "car engine oil change",
    "yoga for beginners",
    "sql join left outer",
    "how to grow tomatoes",
    "medieval history castles",
    "train timetable london to manchester",
]


@dataclass
class Report:
    queries: int = 0
    skipped: int = 0
    top1: float = 0.0
    top5: float = 0.0
    mrr: float = 0.0
    off_topic: int = 0
    false_positive_rate: float = 0.0
    misses: list[str] = field(default_factory=list)
    # Top-5 by the style a set labels its queries with (held-out-v3: paraphrase, symptom, ...).
    top5_by_style: dict[str, float] = field(default_factory=dict)


# Sets written apart from the main one, in bench/search_queries_<name>.yaml. held-out: before the
# relevance floor of issue 15 was changed, never tuned to. dev: later, by someone who had not read
# the search code or the other sets; tuning may look at it. sealed: written with dev, never looked
# at while tuning, so its figures are the honest ones for phrasings nobody tuned search to.
# dev-v3: paraphrases, symptoms, slips and pasted questions written from the bank's questions
# before the fusion of BM25 and meaning was tuned, which was tuned on it (with main and dev).
# dev-v4: more symptoms, paraphrases of questions dev-v3 leaves out, and everyday phrases sharing a
# word with the bank, written by the engineer tuning the fusion a second time (tuned on).
# dev-v5: the five styles and 60 everyday or ML-adjacent off-topic phrases, by a reviewer who had
# read neither the search code, the other sets nor the questions' asked_as lines; tuned on.
QUERY_SETS = (
    "held-out",
    "dev",
    "sealed",
    "dev-v3",
    "dev-v4",
    "dev-v5",
    "held-out-v3",
    "held-out-v4",
    "held-out-v5",
    "held-out-v6",
    "held-out-v7",
    "held-out-v8",
)
# Sets whose misses are never printed: reading them is tuning to them. held-out-v3 (issue 30):
# paraphrases, symptoms, typos, long pasted questions and everyday off-topic phrases, written by a
# reviewer who had read neither the search code nor the other sets, before semantic search was
# tuned; its figures are reported, never tuned on. held-out-v4: the same five styles and harder
# everyday off-topic phrases, by another reviewer who read neither, before the second round of
# tuning (issue 30); reported, never tuned on. held-out-v5: written with dev-v5, on the other
# half of the bank's questions, when asked_as was added; reported, never tuned on. held-out-v6:
# the five styles over 150 questions and 60 everyday or other-field off-topic phrases, by a
# reviewer who had read neither the search code, any other set nor the asked_as lines, after the
# last tuning (issue 30); reported, never tuned on. held-out-v7: the same brief, by another such
# reviewer, a stop later, before any change of that stop; reported, never tuned on. held-out-v8:
# the same brief over 182 questions and 40 off-topic phrases, a stop later again (stop 41).
UNREAD_SETS = (
    "sealed",
    "held-out-v3",
    "held-out-v4",
    "held-out-v5",
    "held-out-v6",
    "held-out-v7",
    "held-out-v8",
)
FILES = {
    "held-out": "heldout",
    "held-out-v3": "heldout_v3",
    "held-out-v4": "heldout_v4",
    "dev-v3": "dev_v3",
    "dev-v4": "dev_v4",
    "dev-v5": "dev_v5",
    "held-out-v5": "heldout_v5",
    "held-out-v6": "heldout_v6",
    "held-out-v7": "heldout_v7",
    "held-out-v8": "heldout_v8",
}
# What search ranks by (settings.SEARCH_SEMANTIC): the full-text ranker alone, BM25 alone, meaning
# alone, all three fused.
MODES = (("off", "full text"), ("words", "BM25"), ("only", "semantic"), ("fused", "fused"))


def query_set(name: str) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """A set of bench/search_queries_<name>.yaml: labelled queries, and off-topic ones."""
    import yaml

    path = ROOT / "bench" / f"search_queries_{FILES.get(name, name)}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    labelled = [(str(q["query"]), [str(s) for s in q["slugs"]]) for q in data["labelled"]]
    return labelled, [str(q) for q in data["off_topic"]]


def query_styles(name: str) -> dict[str, str]:
    """Each labelled query's style, where the set says (held-out-v3)."""
    import yaml

    path = ROOT / "bench" / f"search_queries_{FILES.get(name, name)}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {str(q["query"]): str(q["style"]) for q in data["labelled"] if q.get("style")}


def heldout() -> tuple[list[tuple[str, list[str]]], list[str]]:
    return query_set("held-out")


def evaluate(
    slugs: set[str],
    queries: list[tuple[str, list[str]]] | None = None,
    off_topic: list[str] | None = None,
    styles: dict[str, str] | None = None,
) -> Report:
    """Run every query (the main set unless given) through the search on the current database,
    against the `slugs` it holds."""
    from quizbank.models import Question
    from quizbank.search import question_search

    queries = QUERIES if queries is None else queries
    off_topic = OFF_TOPIC if off_topic is None else off_topic
    report = Report()
    hits1 = hits5 = 0
    reciprocal = 0.0
    by_style: dict[str, list[int]] = {}
    for text, expected in queries:
        wanted = [s for s in expected if s in slugs]
        if not wanted:
            report.skipped += 1
            continue
        report.queries += 1
        found = list(
            question_search(Question.objects.all(), text).values_list("slug", flat=True)[:10]
        )
        rank = next((i for i, slug in enumerate(found, 1) if slug in wanted), None)
        hits1 += rank == 1
        hits5 += rank is not None and rank <= 5
        if styles and text in styles:
            counts = by_style.setdefault(styles[text], [0, 0])
            counts[0] += rank is not None and rank <= 5
            counts[1] += 1
        reciprocal += 1 / rank if rank else 0.0
        if rank != 1:
            report.misses.append(f"{text!r}: wanted {wanted[0]}, rank {rank}; got {found[:3]}")
    false_positives = 0
    for text in off_topic:
        found = list(question_search(Question.objects.all(), text).values_list("slug")[:3])
        report.off_topic += 1
        if found:
            false_positives += 1
            report.misses.append(f"off-topic {text!r} found {[f[0] for f in found]}")
    n = max(report.queries, 1)
    report.top1, report.top5, report.mrr = hits1 / n, hits5 / n, reciprocal / n
    report.false_positive_rate = false_positives / max(report.off_topic, 1)
    report.top5_by_style = {style: hit / n for style, (hit, n) in sorted(by_style.items())}
    return report


def _run_one(database_url: str, names: list[str]) -> None:
    """In a child process: load the bank into `database_url`, evaluate, print the report as JSON."""
    os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quizbank.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import override_settings

    from quizbank.bank.sync import bank_load
    from quizbank.models import Question
    from quizbank.search.encoder import status

    call_command("migrate", verbosity=0)
    bank_load(paths=[ROOT / "fixtures" / "bank"])
    slugs = set(Question.objects.values_list("slug", flat=True))
    sets = {"main": (QUERIES, OFF_TOPIC), **{name: query_set(name) for name in names}}
    reports: dict[str, dict[str, Any]] = {}
    for mode, _ in MODES:
        with override_settings(SEARCH_SEMANTIC=mode):
            for name, (queries, off_topic) in sets.items():
                styles = query_styles(name) if name != "main" else None
                report = evaluate(slugs, queries, off_topic, styles)
                reports.setdefault(name, {})[mode] = asdict(report)
    print(json.dumps({"encoder": status().detail, "reports": reports}))


def _postgres(url: str, sql: str) -> None:
    import psycopg

    base = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/quizbank_search_quality"
        ),
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list the misses")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=QUERY_SETS,
        help="leave a set out (while tuning: --without held-out-v3 --without sealed)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--sets", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _run_one(args.one, args.sets.split(",") if args.sets else [])
        return
    names = [name for name in QUERY_SETS if name not in args.without]
    name = args.database_url.rsplit("/", 1)[1]
    _postgres(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _postgres(args.database_url, f'CREATE DATABASE "{name}"')
    columns = "  ".join(f"{label:<34}" for _, label in MODES)
    print("each: top-1 / top-5 / MRR / share of off-topic queries that find anything")
    print(f"{'database':<11} {'set':<12} {'queries':>9} {columns}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite = f"sqlite:///{tmp}/quality.sqlite3"
            for label, url in (("PostgreSQL", args.database_url), ("SQLite", sqlite)):
                out = subprocess.run(
                    [sys.executable, __file__, "--one", url, "--sets", ",".join(names)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                result = json.loads(out.strip().splitlines()[-1])
                for set_name, by_mode in result["reports"].items():
                    verbose = args.verbose and set_name not in UNREAD_SETS
                    _print(label, set_name, by_mode, verbose=verbose)
                print(f"{label:<11} encoder: {result['encoder']}")
    finally:
        _postgres(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _print(label: str, name: str, by_mode: dict[str, dict[str, Any]], *, verbose: bool) -> None:
    reports = {mode: Report(**by_mode[mode]) for mode, _ in MODES}
    first = reports[MODES[0][0]]
    cells = "  ".join(
        f"{f'{r.top1:.1%} / {r.top5:.1%} / {r.mrr:.3f} / {r.false_positive_rate:.1%}':<34}"
        for r in reports.values()
    )
    print(
        f"{label:<11} {name:<12} {first.queries:>3d} + {first.off_topic:<3d} {cells}"
        + (f"   ({first.skipped} skipped: slugs not in the bank)" if first.skipped else "")
    )
    if first.top5_by_style:
        for style in first.top5_by_style:
            cells = "  ".join(
                f"{f'top-5 {r.top5_by_style[style]:.1%}':<34}" for r in reports.values()
            )
            print(f"{'':<11} {'  ' + style:<22} {cells}")
    if verbose:
        for mode, report in reports.items():
            print("\n".join(f"    [{mode}] {miss}" for miss in report.misses))


if __name__ == "__main__":
    main()
