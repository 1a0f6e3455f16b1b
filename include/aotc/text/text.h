//===- text.h - IR text printer, parser and verifier --------------*- C++ -*-===//
//
// Grammar (schemas/ir.ebnf):
//   graph   := 'graph' '@' NAME '{' item* '}'
//   item    := 'input' VALUE ':' type ROLE ['requires_grad']
//            | defs '=' OP '(' [VALUE {',' VALUE}] ')' [attrs] tag* [loc]
//            | OP '(' args ')' [attrs] tag* [loc]                 (no results)
//            | 'output' VALUE ROLE [ '(' NAME ')' ] [alias]
//   defs    := VALUE ':' type {',' VALUE ':' type}
//   type    := DTYPE '[' [INT {',' INT}] ']' ['{' strides '}'] ['+' INT]
//   attrs   := '{' NAME '=' attr {',' NAME '=' attr} '}'
//   tag     := '#bw' | '#must_save' | '#must_be_in_forward' | '#must_be_in_backward'
//   loc     := 'loc' '(' STRING ')'
//   alias   := 'alias' '(' VALUE ',' '[' [OP attrs {',' OP attrs}] ']' ')'
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "aotc/ir/ir.h"

namespace aotc {

std::string printGraph(const Graph& g);
/// One node as its line of printGraph (a nested graph summarized).
std::string printNode(const Graph& g, const Node& n);
/// Parses one graph.  `file` names the source in diagnostics.
Graph parseGraph(const std::string& text, const std::string& file);
/// Parses graphs separated by lines `// -----` (aotc-opt --split-input-file).
std::vector<std::string> splitInputFile(const std::string& text);

/// Checks SSA form, arities, types (re-running shape inference), tags and the
/// signature.  Throws UserError naming the node on the first violation.
void verifyGraph(const Graph& g, const std::string& file = "");

}  // namespace aotc
