// filter/filter.hpp — what the runtime uses: a verified filter for one event
// type, run by the JIT or (if asked, or if the JIT fails) the interpreter.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "filter/bytecode.hpp"
#include "filter/interpreter.hpp"
#include "filter/jit.hpp"
#include "filter/verifier.hpp"
#include "tracery/internal/event_desc.h"

namespace tracery::filter {

enum class Engine { jit, interpreter };

// "jit" or "interpreter"; nullopt for anything else.
std::optional<Engine> parse_engine(std::string_view name);

// TRACERY_FILTER_ENGINE=jit|interpreter; jit when unset. Any other value:
// jit, and one line reported (base::diagnostic; read once per process).
Engine default_engine();

class Filter {
public:
	// nullptr (and the verifier's reason in *why) if the program does not
	// verify against desc, which must outlive the filter. A JIT failure is
	// not an error: the filter interprets (engine() says which runs).
	static std::unique_ptr<Filter> load(const Program &program, const tracery_event_desc &desc, Engine engine,
	                                    std::string *why);

	// True if the event passes. ctx may be null unless uses_context().
	bool accepts(const tracery_arg *args, const Context *ctx) const
	{
		if (fn_) [[likely]]
			return fn_(args, ctx) != 0;
		return interpret(program_, desc_, args, ctx);
	}

	// True if accepts() reads ctx (context fields or the process name).
	bool uses_context() const { return info_.uses_context || info_.uses_procname; }
	const VerifiedInfo &info() const { return info_; }
	Engine engine() const { return fn_ ? Engine::jit : Engine::interpreter; }

private:
	Filter(const Program &program, const tracery_event_desc &desc, const VerifiedInfo &info)
		: program_(program), desc_(desc), info_(info)
	{
	}

	FilterFn fn_ = nullptr; // set when the JIT runs
	Program program_;
	const tracery_event_desc &desc_;
	VerifiedInfo info_;
	std::unique_ptr<Jit> jit_;
};

} // namespace tracery::filter
