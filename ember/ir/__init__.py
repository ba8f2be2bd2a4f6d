"""ember's intermediate representation: typed tensors, nodes and graphs."""

from ember.ir.dtypes import DType, QuantParams, TensorType
from ember.ir.graph import Graph, Node, Value

__all__ = ["DType", "Graph", "Node", "QuantParams", "TensorType", "Value"]
