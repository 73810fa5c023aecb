// kernel/page_decoder.cpp — see page_decoder.hpp.
#include "kernel/page_decoder.hpp"

#include <string>

namespace tracery::kernel {

PageLayout make_page_layout(const PageHeaderFormat &page, const EventHeaderFormat &event)
{
	if (event.type_len_bits != 5 || event.time_delta_bits != kTimeShift || event.data_max != kTypePadding - 1 ||
	    event.padding != kTypePadding || event.time_extend != kTypeTimeExtend || event.time_stamp != kTypeTimeStamp)
		throw FormatError("events/header_event: an event header other than {type_len:5, time_delta:27} with "
		                  "types 29/30/31 (type_len " +
		                  std::to_string(event.type_len_bits) + " bits, padding " +
		                  std::to_string(event.padding) + ")");
	return {page.timestamp_offset, page.commit_offset, page.commit_size, page.data_offset, page.page_size()};
}

} // namespace tracery::kernel
