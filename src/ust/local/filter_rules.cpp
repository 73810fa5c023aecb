// TRACERY_FILTER rules: see filter_rules.hpp.
#include "ust/local/filter_rules.hpp"

#include "filter/compiler.hpp"
#include "filter/parser.hpp"
#include "ust/session.hpp"

namespace tracery::ust {
namespace {

// Splits at ';' outside double-quoted strings (which may escape quotes).
std::vector<std::string> split_rules(const std::string &value)
{
	std::vector<std::string> out(1);
	bool quoted = false;
	for (size_t i = 0; i < value.size(); i++) {
		const char c = value[i];
		if (quoted && c == '\\' && i + 1 < value.size()) {
			out.back() += value.substr(i++, 2);
			continue;
		}
		if (c == '"')
			quoted = !quoted;
		if (c == ';' && !quoted)
			out.emplace_back();
		else
			out.back() += c;
	}
	return out;
}

// "provider:name=EXPR" -> pattern and expression; anything else is an
// expression for every event. '==' is never the pattern's '='.
FilterRule split_rule(const std::string &text)
{
	const size_t begin = text.find_first_not_of(" \t");
	if (begin == std::string::npos)
		return {"*", text};
	size_t end = begin;
	while (end < text.size() && (isalnum(static_cast<unsigned char>(text[end])) ||
	                             std::string_view("_:*.-").find(text[end]) != std::string_view::npos))
		end++;
	const std::string pattern = text.substr(begin, end - begin);
	const bool is_pattern = pattern.find_first_of(":*") != std::string::npos;
	if (is_pattern && end < text.size() && text[end] == '=' && (end + 1 == text.size() || text[end + 1] != '='))
		return {pattern, text.substr(end + 1)};
	return {"*", text};
}

} // namespace

std::optional<std::vector<FilterRule>> parse_filter_rules(const std::string &value, std::string *error)
{
	std::vector<FilterRule> rules;
	for (const auto &text : split_rules(value)) {
		FilterRule rule = split_rule(text);
		filter::Error e;
		if (!filter::parse(rule.expression, &e)) {
			*error = "TRACERY_FILTER: bad filter for '" + rule.pattern +
			         "': " + filter::render_error(rule.expression, e);
			return std::nullopt;
		}
		rules.push_back(std::move(rule));
	}
	return rules;
}

std::optional<std::vector<filter::Program>> compile_filter_rules(const std::vector<FilterRule> &rules,
                                                                 const tracery_event_desc &desc, std::string *error)
{
	std::vector<filter::Program> programs;
	for (const auto &rule : rules) {
		if (!pattern_matches(rule.pattern, desc))
			continue;
		filter::Error e;
		auto compiled = filter::compile_filter(rule.expression, desc, &e);
		if (!compiled) {
			*error = "filter of " + rule.pattern + " does not apply to event " + desc.provider + ":" +
			         desc.name + ": " + filter::render_error(rule.expression, e);
			return std::nullopt;
		}
		programs.push_back(std::move(compiled->program));
	}
	return programs;
}

} // namespace tracery::ust
