// The event filters a session's programs apply: see filter_cache.hpp.
#include "daemon/filter_cache.hpp"

#include "daemon/log.hpp"

#include "control/wire.hpp"
#include "event/schema.hpp"
#include "filter/compiler.hpp"

namespace tracery::daemon {

using nlohmann::json;

std::map<std::string, std::vector<std::string>> FilterCache::filters_for(const Channel &ch,
                                                                         const std::map<std::string, json> &events)
{
	std::map<std::string, std::vector<std::string>> out;
	for (const auto &[key, schema] : events) {
		const std::string name = event::full_name(schema);
		if (!ch.enabled(name))
			continue;
		std::vector<std::string> programs;
		for (const auto &expression : ch.filters_of(name)) {
			auto [it, is_new] = bytecode_.try_emplace({key, expression});
			if (is_new) {
				filter::Program program{
					{{filter::Op::push_int, 0, 0, 0, 0}, {filter::Op::ret, 0, 0, 0, 0}}, {}};
				filter::Error error;
				try {
					event::OwnedEventDesc desc(schema);
					if (auto compiled = filter::compile_filter(expression, desc.desc(), &error))
						program = std::move(compiled->program);
					else
						log(Level::warn,
						    "session %s: event %s is not recorded: its filter does not apply: %s",
						    session_.name.c_str(), name.c_str(), error.message.c_str());
				} catch (const std::exception &e) {
					log(Level::warn, "session %s: event %s: %s", session_.name.c_str(), key.c_str(),
					    e.what());
				}
				it->second = control::to_hex(filter::encode(program));
			}
			programs.push_back(it->second);
		}
		if (!programs.empty())
			out[key] = programs;
	}
	return out;
}

} // namespace tracery::daemon
