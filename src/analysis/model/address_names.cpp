// analysis/model/address_names.cpp — code addresses named as at the event
// where they are first seen (see address_names.hpp).
#include "analysis/model/address_names.hpp"

namespace tracery::analysis {

AddressNames::AddressNames(std::optional<SymbolOptions> symbols)
{
	if (symbols)
		symbols_.emplace(std::move(*symbols));
}

void AddressNames::see(int64_t vpid, uint64_t address, Style style)
{
	if (!symbols_)
		return;
	const std::pair key{vpid, address};
	if (names_.count(key))
		return;
	if (names_.size() >= kMaxNames) {
		++unnamed_;
		return;
	}
	names_.emplace(key, address_name(symbols_->resolver().resolve(vpid, address), address, style));
}

AddressNamer AddressNames::namer() const
{
	if (!symbols_)
		return hex_address;
	return [this](uint64_t address, int64_t vpid) {
		const auto found = names_.find({vpid, address});
		return found != names_.end() ? found->second : hex_address(address);
	};
}

void AddressNames::report(FILE *err)
{
	if (!symbols_)
		return;
	symbols_->resolver().report(err);
	if (unnamed_)
		fprintf(err,
		        "tracery: symbols: %llu sighting(s) of addresses beyond the %zu names kept, shown in hex\n",
		        static_cast<unsigned long long>(unnamed_), kMaxNames);
}

std::string address_name(const Symbol *s, uint64_t address, AddressNames::Style style)
{
	if (!s || (s->func.empty() && s->bin.empty()))
		return hex_address(address);
	if (s->func.empty())
		return s->bin;
	if (style == AddressNames::function)
		return s->function;
	return s->src.empty() ? s->func : s->func + " (" + s->src + ")";
}

} // namespace tracery::analysis
