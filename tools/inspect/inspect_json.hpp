// JSON views and the usage of a result, shared by the resource table and the diff. Internal to
// runtime/inspect.
#pragma once

#include <kjit/tools/inspect.hpp>

#include <nlohmann/json.hpp>

namespace kjit::inspect {

nlohmann::json usage_json(const ResourceUsage& usage);

// What ptxas reported in `result`'s log, completed from its cubin when it has one (CUDA 13's
// ptxas reports no constant or local memory and no bounds): resource_usage() without the
// driver and without the check for a virtual arch (its usage is empty: no log, no cubin).
std::vector<ResourceUsage> usage_from_result(const CompileResult& result);

}  // namespace kjit::inspect
