// How the ONNX exporter (onnx_export.cpp) writes a graph: nodes, initializers and attributes,
// each value under a name of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx_subset.pb.h"

namespace dl {

// Appends nodes, initializers and attributes to one graph, naming every value after its layer.
// Layer names are the user's, so a wished-for name may be taken ("a" + ".W" is the name of a
// layer "a.W", a layer may be named like the graph's output): each value gets the name wished
// for, or that name with "_2", "_3"... (fresh), and callers read the name a value got from what
// node() and tensor() return.
class GraphBuilder {
 public:
  // `reserved`: names no value gets (the graph's input, and its output, which the exporter
  // gives to the last node's output at the end).
  GraphBuilder(onnx::GraphProto& graph, std::set<std::string> reserved)
      : graph_(graph), used_(std::move(reserved)) {}

  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::string& output) {
    const std::string name = fresh(output);
    onnx::NodeProto& n = *graph_.add_node();
    n.set_op_type(op);
    n.set_name(name);
    for (const std::string& in : inputs) n.add_input(in);
    n.add_output(name);
    return n;
  }
  // The value a node computes.
  static std::string output_of(const onnx::NodeProto& n) { return n.output(0); }

  // A float initializer holding `count` values from `values`, shaped `dims`; returns its name.
  std::string tensor(const std::string& name, const std::vector<std::int64_t>& dims,
                     const float* values, std::size_t count) {
    const std::string unique = fresh(name);
    onnx::TensorProto& t = *graph_.add_initializer();
    t.set_name(unique);
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : dims) t.add_dims(d);
    // raw_data is little-endian; so is every machine dl-train runs on (x86-64, aarch64).
    t.set_raw_data(std::string(reinterpret_cast<const char*>(values), count * sizeof(float)));
    return unique;
  }

  static void ints(onnx::NodeProto& n, const char* name, const std::vector<std::int64_t>& values) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INTS);
    for (std::int64_t v : values) a.add_ints(v);
  }
  static void integer(onnx::NodeProto& n, const char* name, std::int64_t value) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(value);
  }
  static void real(onnx::NodeProto& n, const char* name, float value) {
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(value);
  }

  void value(onnx::ValueInfoProto& v, const std::string& name,
             const std::vector<std::int64_t>& dims) {
    v.set_name(name);
    onnx::TypeProto::Tensor& t = *v.mutable_type()->mutable_tensor_type();
    t.set_elem_type(onnx::TensorProto::FLOAT);
    onnx::TensorShapeProto& shape = *t.mutable_shape();
    shape.add_dim()->set_dim_param("batch");  // any batch size
    for (std::int64_t d : dims) shape.add_dim()->set_dim_value(d);
  }
  void input(const std::string& name, const std::vector<std::int64_t>& dims) {
    value(*graph_.add_input(), name, dims);
  }
  void output(const std::string& name, const std::vector<std::int64_t>& dims) {
    value(*graph_.add_output(), name, dims);
  }

 private:
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; !used_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  onnx::GraphProto& graph_;
  std::set<std::string> used_;  // every value's name so far
};

}  // namespace dl
