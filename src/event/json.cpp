// The parts of nlohmann/json that event/json.hpp declares compiled here, once.
#include "event/json.hpp"

template class nlohmann::detail::serializer<nlohmann::json>;
template class nlohmann::detail::lexer<nlohmann::json, tracery::event::JsonStringInput>;
template class nlohmann::detail::parser<nlohmann::json, tracery::event::JsonStringInput>;
template class nlohmann::detail::json_sax_dom_parser<nlohmann::json>;
template class nlohmann::detail::json_sax_dom_callback_parser<nlohmann::json>;
