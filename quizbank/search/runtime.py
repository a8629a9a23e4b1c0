"""onnxruntime, where it is installed: the encoder's layers (encoder.py) and the symptom passages'
coarse scores (semantic.py) run there, each as a small graph written here with onnx, in memory.
Where it is not, numpy computes the same (`graph()` is None).

Every session runs on one thread without spinning: a web worker serves one request at a time, and
on this 2-core machine a second thread would take the core PostgreSQL ranks on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np


class Graph(NamedTuple):
    """onnx's graph-writing modules."""

    helper: Any
    tensor: Any  # onnx.TensorProto: element types
    numpy: Any  # onnx.numpy_helper


def graph() -> Graph | None:
    """onnx's graph tools, or None where onnx or onnxruntime is not installed."""
    try:
        import onnxruntime  # noqa: F401 - only whether it is there
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    return Graph(helper, TensorProto, numpy_helper)


def session(tools: Graph, nodes: list, inputs: list, outputs: list, initializers: list) -> Any:
    """An onnxruntime session of the graph these make (opset 17), on one thread."""
    import onnxruntime

    model = tools.helper.make_model(
        tools.helper.make_graph(nodes, "quizbank", inputs, outputs, initializers),
        opset_imports=[tools.helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def int8_product(matrix: np.ndarray) -> Callable[[np.ndarray], np.ndarray] | None:
    """`vector -> matrix @ vector`, approximately, from the matrix's rows stored as 8-bit integers
    (each row scaled by its own largest value), a quarter of float32's bytes to read; the vector
    is quantized to 8 bits as it comes. Each result is within about 1% of the rows' and the
    vector's largest values (a test holds it). None without onnxruntime, or where its session
    fails to start (numpy then multiplies the float32 matrix)."""
    import numpy as np

    tools = graph()
    if tools is None:
        return None
    rows, columns = matrix.shape
    largest = np.abs(matrix).max(axis=1)
    scale = np.where(largest > 0, largest / 127, 1).astype(np.float32)
    # Unsigned with a zero point of 128, like the vector: x86's 8-bit products of a signed and an
    # unsigned operand add pairs into 16 bits, which saturate (measured: errors of 20%).
    stored = (np.rint(matrix / scale[:, None]) + 128).astype(np.uint8).T
    helper, element = tools.helper, tools.tensor
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["vector"], ["q", "q_scale", "q_zero"]),
        helper.make_node("MatMulInteger", ["q", "stored", "q_zero", "zero"], ["sums"]),
        helper.make_node("Cast", ["sums"], ["real"], to=element.FLOAT),
        helper.make_node("Mul", ["real", "q_scale"], ["scaled"]),
        helper.make_node("Mul", ["scaled", "row_scale"], ["out"]),
    ]
    initializers = [
        tools.numpy.from_array(np.ascontiguousarray(stored), "stored"),
        tools.numpy.from_array(np.array(128, dtype=np.uint8), "zero"),
        tools.numpy.from_array(scale[None], "row_scale"),
    ]
    try:
        run = session(
            tools,
            nodes,
            [helper.make_tensor_value_info("vector", element.FLOAT, [1, columns])],
            [helper.make_tensor_value_info("out", element.FLOAT, [1, rows])],
            initializers,
        ).run
    except Exception:  # noqa: BLE001 - whatever stops it, numpy's float32 product serves
        return None

    def product(vector: np.ndarray) -> np.ndarray:
        (out,) = run(None, {"vector": vector.astype(np.float32).reshape(1, columns)})
        return out[0]

    return product
