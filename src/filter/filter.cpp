// filter/filter.cpp — engine choice and filter loading.
#include "filter/filter.hpp"

#include "base/diagnostics.hpp"

#include <cstdio>
#include <cstdlib>

namespace tracery::filter {

std::optional<Engine> parse_engine(std::string_view name)
{
	if (name == "jit")
		return Engine::jit;
	if (name == "interpreter")
		return Engine::interpreter;
	return std::nullopt;
}

Engine default_engine()
{
	static const Engine engine = [] {
		const char *env = std::getenv("TRACERY_FILTER_ENGINE");
		if (!env || !*env)
			return Engine::jit;
		if (const std::optional<Engine> e = parse_engine(env))
			return *e;
		base::diagnostic("TRACERY_FILTER_ENGINE=%s is not jit or interpreter; using jit", env);
		return Engine::jit;
	}();
	return engine;
}

std::unique_ptr<Filter> Filter::load(const Program &program, const tracery_event_desc &desc, Engine engine,
                                     std::string *why)
{
	VerifiedInfo info;
	if (!verify(program, desc, &info, why))
		return nullptr;
	std::unique_ptr<Filter> filter(new Filter(program, desc, info));
	if (engine == Engine::jit) {
		std::string jit_why;
		filter->jit_ = Jit::compile(program, desc, info, &jit_why);
		if (filter->jit_)
			filter->fn_ = filter->jit_->fn();
		else
			base::diagnostic("%s; interpreting the filter", jit_why.c_str());
	}
	return filter;
}

} // namespace tracery::filter
