// Filters of daemonless mode (TRACERY_FILTER): which filter expression applies
// to which events, each compiled for an event when it is attached.
//
//   TRACERY_FILTER='EXPR'                          every traced event
//   TRACERY_FILTER='PATTERN=EXPR;PATTERN=EXPR...'  events matching PATTERN
//
// PATTERN is provider:name with '*' wildcards, as in TRACERY_EVENTS. ';'
// inside a string literal does not split. An event matched by several rules
// is recorded when any of their filters accepts it; an event matched by none
// is recorded unfiltered.
#pragma once

#include "filter/bytecode.hpp"

#include <tracery/internal/event_desc.h>

#include <optional>
#include <string>
#include <vector>

namespace tracery::ust {

struct FilterRule {
	std::string pattern;
	std::string expression;
};

// Splits and parses the value; on a bad one, sets *error to the message with
// the expression and a caret under the fault, and returns nothing.
std::optional<std::vector<FilterRule>> parse_filter_rules(const std::string &value, std::string *error);

// The programs of the rules matching the event. Nothing (and *error set)
// when a filter does not apply to the event's field types.
std::optional<std::vector<filter::Program>> compile_filter_rules(const std::vector<FilterRule> &rules,
                                                                 const tracery_event_desc &desc, std::string *error);

} // namespace tracery::ust
