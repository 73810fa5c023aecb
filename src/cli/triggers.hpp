// add-trigger, list-triggers, remove-trigger and watch (triggers.cpp).
#pragma once

#include "control/trigger_messages.hpp"

#include <string>
#include <vector>

namespace tracery::cli {

// add-trigger's arguments, in lttng's order (see triggers.cpp), as its request; CliError for a bad one.
control::AddTrigger parse_add_trigger(const std::vector<std::string> &args);
int verb_add_trigger(const std::vector<std::string> &args);
int verb_list_triggers();
int verb_remove_trigger(const std::string &name);
// Prints each notification of the triggers named (none: all the user's) as one JSON object a line, until the
// daemon ends.
int verb_watch(const std::vector<std::string> &names);

} // namespace tracery::cli
