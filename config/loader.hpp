#pragma once
// The wirepool schema on top of Reader: reads a whole file into a Config, then
// runs the checks that need all of it. Internal to config/; load() is the API.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace wirepool::config {

/// Reads `yaml` into `config` and answers every problem found (empty = valid).
/// `file` names the source in messages; `config_dir` (absolute) is where a
/// relative state_dir starts.
std::vector<Problem> load_into(Config& config, std::string_view yaml, const std::string& file,
                               const std::filesystem::path& config_dir,
                               DatabaseValidator validator);

}  // namespace wirepool::config
