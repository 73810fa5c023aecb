// event/json.hpp — nlohmann/json as the event schemas and the control
// protocol use it, with its serializer (dump()) and its parser of a
// std::string (parse()) compiled once, in json.cpp, rather than in every
// file that calls them: they cost 2 and 6 s of compiling in each such file
// under AddressSanitizer. Include this instead of <nlohmann/json.hpp>.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tracery::event {
// What json::parse reads a std::string through.
using JsonStringInput = nlohmann::detail::iterator_input_adapter<std::string::const_iterator>;
} // namespace tracery::event

extern template class nlohmann::detail::serializer<nlohmann::json>;
extern template class nlohmann::detail::lexer<nlohmann::json, tracery::event::JsonStringInput>;
extern template class nlohmann::detail::parser<nlohmann::json, tracery::event::JsonStringInput>;
extern template class nlohmann::detail::json_sax_dom_parser<nlohmann::json>;
extern template class nlohmann::detail::json_sax_dom_callback_parser<nlohmann::json>;
