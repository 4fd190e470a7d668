// The cache of a GPU's measured ceilings (measure/ceilings.cuh): one small JSON file per GPU,
//   $WORKBOOK_CACHE_DIR, else $XDG_CACHE_HOME/kernel-workbook, else ~/.cache/kernel-workbook
// as ceilings-<gpu uuid>.json. Plain C++, host-tested.
#pragma once
#include <optional>
#include <string>

#include "measure/roofline.h"

namespace wb {

// The cache folder, from the environment as above.
std::string ceilings_cache_dir();

// The ceilings stored at `path`, or nullopt when there is no file or it holds no copy rate.
// A file that is not JSON is reported on stderr and ignored (measured again).
std::optional<Ceilings> read_ceilings_cache(const std::string& path);

// Stores `c` at `path` (creating its folder) with the device it was measured on. False when
// the file cannot be written.
bool write_ceilings_cache(const std::string& path, const std::string& device, const std::string& uuid,
                          const std::string& driver, const Ceilings& c);

}  // namespace wb
