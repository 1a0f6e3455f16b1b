//===- reduce.h - aotc reduce: a failing model shrunk to a repro -*- C++ -*-===//
//
// Note [Reduce]: `aotc reduce MODEL --check ... -o DIR` shrinks a model that
// shows a failure to one that still shows it with as few nodes as it can
// keep, and writes that model, its weights and its inputs as a standalone
// repro directory (README.md says how to reproduce).
//
// The failure is a check run on every candidate in a child process, so a
// crash of the compiler is a verdict rather than the reducer's end:
//   --check 'CMD {}'   a command (sh -c), {} the candidate's model file;
//                      exit status 0 means "still fails" (C-Reduce's
//                      interestingness test);
//   --crash            `aotc compile` exits with an internal error (status 3)
//                      or dies of a signal (--error-contains TEXT: and its
//                      stderr holds TEXT);
//   --mismatch A,B     compiled, run on backends A and B (`aotc run`), the
//                      results differ beyond --atol/--rtol (a NaN against a
//                      number, or a different shape, differs);
//   --expected FILE    compiled, run on --backend, an output differs from
//                      FILE's output.<i> of the same original output.
//
// Candidates are FX JSON documents (the .pt2 door translates its program to
// the same document, pt2FxDocument) or ONNX models (Note [Reduce ONNX]).  A
// candidate keeps a subset of the original's nodes
// and outputs; each removed node's uses read a substitute:
//   bypass     the first of the node's tensor operands with its dtype and
//              shape (not under --expected: it changes values);
//   new input  a user input named after the node, of its type, holding the
//              value the original computed there (Note [Reduce values]);
// a graph output of a removed node is its first tensor operand, of any type
// (not under --expected: output i keeps its value there), or goes with it; a
// node whose value has no substitute (a tuple, an integer) goes only with
// its readers.
// Inputs no kept node reads leave.  The kept set is minimized by delta
// debugging (Zeller's ddmin over nodes and outputs, repeated until a whole
// pass removes nothing), each candidate judged once (memoized by its kept
// set), in a fixed order, so the same model and check give the same repro.
//
// Note [Reduce values]: a new input's value is what the original model
// computes for that node: the original is compiled once more with every
// tensor value it can name as an extra output and run forward on the
// reference backend, the oracle.  Where that cannot be done (a graph with
// in-place ops, whose values change after they are computed; a compile or
// run that fails) the values are drawn from a generator seeded by the name
// (floats in [-1, 1), integers in [0, 3)), said on stderr.  Under --expected
// a new input is made only from captured values and only when the backend
// under test is not the reference: values the suspect computed would carry
// its error into the inputs and let the faulty node go.  (Were the reference
// wrong too, the repro could hold the error in an input: reduce with
// --backend reference, which only deletes: the outputs that differ and the
// nodes they read.)
//
// Note [Reduce ONNX]: an ONNX model is read as the front end reads it
// (readOnnxBytes; one with external data is refused by name: the repro is
// one file) and reduced over its main graph's nodes by the same ddmin and
// the same substitutes: a node is a unit with all its outputs (an If, Loop
// or Scan with its subgraphs whole: the outer values they read are its
// operands, renamed inside them when bypassed; ONNX names cannot shadow
// across scopes); a value's type (dtype and static sizes) comes from ONNX
// shape inference, run on a copy in a child process (its rules trust their
// inputs, and the model may be the one under --crash), else from what the
// model declares.  A candidate is the original ModelProto with the kept
// nodes, the graph inputs and initializers they read (unused ones dropped),
// a graph input per new input (value_info of its type), its outputs (one
// that reads a bypass renamed to it; two outputs of one value are not a
// candidate), value_info of kept values, and the opset imports, functions
// and metadata unchanged; written by SerializeToString (ONNX's messages have
// no maps: the bytes are a function of the message).  Its inputs.safetensors
// holds each input under the name the artifact gives it (onnxInputName).
// The values are captured as for FX: the original with every typed value a
// node computes as an extra graph output (one already an output is read
// there).
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "aotc/driver/driver.h"

namespace aotc {

struct ReduceOptions {
  std::string model;    ///< FX JSON, .pt2 or .onnx
  std::string out_dir;  ///< the repro directory (must not exist)
  std::string inputs;   ///< safetensors with the user inputs ("" = drawn)
  /// The failing check (exactly one).
  std::string check_cmd;                 ///< --check
  bool crash = false;                    ///< --crash
  std::string error_contains;            ///< --crash: stderr must hold this
  std::vector<std::string> mismatch;     ///< --mismatch A,B
  std::string expected;                  ///< --expected FILE
  std::string backend = "reference";     ///< --expected's backend
  double atol = 1e-5, rtol = 1e-4;
  bool forward_only = false;             ///< `aotc run --forward-only`
  std::vector<std::string> compile_args; ///< extra `aotc compile` arguments
  FrontendOptions frontend;              ///< .pt2: --train, --model
  double timeout_s = 300;                ///< per child process
  std::string aotc;                      ///< the aotc binary ("" = this one)
};

struct ReduceResult {
  size_t nodes_before = 0, nodes_after = 0, outputs_after = 0, checks = 0;
};

/// Shrinks the model; throws UserError when the original does not fail the
/// check, or on bad options or files.
ReduceResult reduceModel(const ReduceOptions& opts, const Logger& log);

/// `aotc compile --repro-dir D`: runs `compile` (returning an exit status) in
/// a child process, its stderr passed through; when it ends with status 3
/// or a signal (an internal error, an abort), writes the repro (below).
/// Returns the exit status (3 for a signal).
int compileWithRepro(const std::string& dir, const std::string& model, const std::vector<std::string>& argv,
                     const std::function<int()>& compile);

/// `aotc compile --repro-dir D` (an internal error): the model file (an FX
/// JSON's weights beside it too) and a README with the command line `argv`
/// that failed, written whole into D (which must not exist).  Never throws:
/// returns "" or why it could not.
std::string writeCompileRepro(const std::string& dir, const std::string& model, const std::vector<std::string>& argv,
                              const std::string& error);

}  // namespace aotc
