// JSON views shared by the resource table and the diff. Internal to runtime/inspect.
#pragma once

#include <kjit/tools/inspect.hpp>

#include <nlohmann/json.hpp>

namespace kjit::inspect {

nlohmann::json usage_json(const ResourceUsage& usage);

}  // namespace kjit::inspect
