// The current session, remembered per user in ~/.tracery/current as lttng
// does: set by `tracery create`, used by verbs given no session name.
#pragma once

#include <string>

namespace tracery::cli {

void set_current_session(const std::string &name);
void forget_current_session(const std::string &name); // only if it is NAME
// The name given, else the current session; throws CliError if neither.
std::string session_or_current(const std::string &given);

} // namespace tracery::cli
