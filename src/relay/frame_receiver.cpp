// relay/frame_receiver.cpp — frames from the bytes of reads of any size: a
// body whole within the bytes given is decoded where it lies; one that spans
// reads is gathered in a private anonymous mapping (pages given on first
// touch, all returned by munmap), then decoded and unmapped.
#include "relay/frame_receiver.hpp"

#include "base/byte_order.hpp"
#include "base/cat.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

namespace tracery::relay {

namespace cr = control::relay;
using base::cat;

FrameReceiver::~FrameReceiver() { unmap(); }

void FrameReceiver::unmap()
{
	if (body_)
		::munmap(body_, body_size_);
	body_ = nullptr;
}

void FrameReceiver::drop()
{
	unmap();
	header_have_ = 0;
	body_size_ = 0;
	body_have_ = 0;
}

std::string FrameReceiver::start_frame(std::vector<Received> &out, Clock::time_point now)
{
	// The header's checks are the decoder's: given the header alone, it
	// refuses it, or has a frame (an empty body), or waits for the body.
	cr::Decoder check;
	check.feed({header_, cr::kHeaderSize});
	cr::Frame f;
	switch (check.next(f)) {
	case cr::Decoder::Status::error:
		return check.error();
	case cr::Decoder::Status::frame:
		out.push_back({std::move(f), cr::kHeaderSize});
		header_have_ = 0;
		return {};
	case cr::Decoder::Status::needs_more:
		break;
	}
	body_size_ = base::load_le<uint32_t>(header_ + 8);
	if (hello_only_ && body_size_ > kMaxHelloBody)
		return cat(cr::type_name(base::load_le<uint16_t>(header_ + 6)), " of ", std::to_string(body_size_),
		           " bytes before HELLO (a HELLO has at most ", std::to_string(kMaxHelloBody), ")");
	started_ = now;
	return {};
}

std::string FrameReceiver::finish(std::span<const uint8_t> body, std::vector<Received> &out)
{
	cr::Frame f;
	std::string why = cr::decode_body(base::load_le<uint16_t>(header_ + 6), body, f);
	const size_t size = cr::kHeaderSize + body_size_;
	drop();
	if (why.empty())
		out.push_back({std::move(f), size});
	return why;
}

size_t FrameReceiver::take(std::span<const uint8_t> bytes, std::vector<Received> &out, Clock::time_point now,
                           std::string *error)
{
	error->clear();
	const size_t given = bytes.size();
	const size_t frames_before = out.size();
	while (!bytes.empty() && error->empty() && !(hello_only_ && out.size() > frames_before)) {
		if (header_have_ < cr::kHeaderSize) {
			const size_t n = std::min(cr::kHeaderSize - header_have_, bytes.size());
			std::memcpy(header_ + header_have_, bytes.data(), n);
			header_have_ += n;
			bytes = bytes.subspan(n);
			if (header_have_ == cr::kHeaderSize)
				*error = start_frame(out, now);
			continue;
		}
		const size_t n = std::min(missing(), bytes.size());
		if (body_have_ == 0 && n == body_size_) { // the whole body is here
			*error = finish(bytes.first(n), out);
			bytes = bytes.subspan(n);
			continue;
		}
		if (!body_) {
			void *p = ::mmap(nullptr, body_size_, PROT_READ | PROT_WRITE,
			                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p == MAP_FAILED)
				throw std::runtime_error(cat("mmap of a ", std::to_string(body_size_),
				                             "-byte frame: ", std::strerror(errno)));
			body_ = static_cast<uint8_t *>(p);
		}
		std::memcpy(body_ + body_have_, bytes.data(), n);
		body_have_ += n;
		bytes = bytes.subspan(n);
		if (body_have_ == body_size_)
			*error = finish({body_, body_size_}, out);
	}
	return given - bytes.size();
}

} // namespace tracery::relay
