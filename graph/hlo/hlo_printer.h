#ifndef GOPT_GRAPH_HLO_HLO_PRINTER_H_
#define GOPT_GRAPH_HLO_HLO_PRINTER_H_

#include <string>

#include "graph/hlo/hlo_module.h"

namespace gopt::graph::hlo {

// Prints `module` as HLO text in the current syntax (operands by name,
// `%`-prefixed names, the entry computation marked ENTRY, computations in
// module order). Only what HloModule keeps is printed: the attributes gopt
// models, backend configs, fusion kinds, shardings, a collective's group
// size (as `replica_groups=[1,S]<=[S]`: device ids are not kept) and
// constant literals (`{...}` for non-scalar constants read from a proto).
// ParseHloText of the result yields an equal module, except for proto ids.
// `module` must have passed ValidateHloModule. Thread-safe.
std::string PrintHloModule(const HloModule& module);

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_PRINTER_H_
