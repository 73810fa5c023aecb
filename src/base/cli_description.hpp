// A command line's definition as JSON (the hidden option --dump-cli-json of
// tracery, traceryd and tracery-relayd): every verb with its options and
// arguments, their help lines. The man pages and the shell completion are
// generated from it at build time (packaging/), so that they say what --help
// says. Header-only: only the programs' main.cpp, which include CLI11, use it.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace tracery::base {

inline nlohmann::json describe_cli(const CLI::App &app)
{
	nlohmann::json options = nlohmann::json::array(), verbs = nlohmann::json::array();
	for (const CLI::Option *o : app.get_options()) {
		if (o->get_group().empty())
			continue; // hidden
		const bool takes_value = o->get_type_size_max() > 0;
		options.push_back({{"positional", o->get_positional() ? o->get_name(true) : ""},
		                   {"short", o->get_snames()},
		                   {"long", o->get_lnames()},
		                   {"value", takes_value ? o->get_type_name() : ""},
		                   {"value_optional", takes_value && o->get_expected_min() == 0},
		                   {"required", o->get_required()},
		                   {"repeatable", o->get_expected_max() > 1},
		                   {"description", o->get_description()}});
	}
	for (const CLI::App *verb : app.get_subcommands([](const CLI::App *) { return true; }))
		verbs.push_back(describe_cli(*verb));
	return {{"name", app.get_name()},
	        {"description", app.get_description()},
	        {"options", options},
	        {"verbs", verbs}};
}

// True (the JSON printed on stdout) when the only argument is --dump-cli-json.
inline bool dump_cli_if_asked(const CLI::App &app, int argc, char **argv)
{
	if (argc != 2 || std::string(argv[1]) != "--dump-cli-json")
		return false;
	printf("%s\n", describe_cli(app).dump(1, '\t').c_str());
	return true;
}

} // namespace tracery::base
