// The git commit the programs were built from ("3f2a1c9", "3f2a1c9-dirty", or "unknown").
#pragma once
#include <string>

namespace wb {
std::string git_commit();
}
