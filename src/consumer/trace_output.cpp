// consumer/trace_output.cpp — see trace_output.hpp.
#include "consumer/trace_output.hpp"

#include "consumer/file_sink.hpp"
#include "consumer/relay_sink.hpp"
#include "consumer/tee_sink.hpp"
#include "ctf/trace_dir.hpp"

#include <filesystem>
#include <utility>

namespace tracery::consumer {

TraceOutput::TraceOutput(std::string local_dir, std::shared_ptr<RelayLink> link, const std::string &relay_path)
	: local_dir_(std::move(local_dir)), link_(std::move(link))
{
	if (link_)
		trace_ = link_->add_trace(relay_path);
	relay_name_ = relay_path.substr(relay_path.rfind('/') + 1);
}

void TraceOutput::create_local() const
{
	if (!local_dir_.empty())
		ctf::make_directories(local_dir_, 0700);
}

void TraceOutput::write_metadata(std::string_view text)
{
	metadata_->assign("");
	append_metadata(text);
}

void TraceOutput::append_metadata(std::string_view text)
{
	if (link_)
		link_->append_metadata(trace_, text);
	metadata_->append(text);
	if (!local_dir_.empty())
		ctf::TraceDir(local_dir_).write_metadata(metadata_->text());
}

void TraceOutput::continue_in(std::string dir)
{
	if (!local_dir_.empty() || !link_) {
		ctf::make_directories(dir, 0700);
		ctf::TraceDir(dir).write_metadata(metadata_->text());
	}
	if (link_) {
		const std::string parent = std::filesystem::path(dir).parent_path().filename().string();
		trace_ = link_->continue_trace(trace_, parent + "/" + relay_name_);
	}
	if (!local_dir_.empty() || !link_)
		previous_dir_ = std::exchange(local_dir_, std::move(dir));
}

void TraceOutput::go_back()
{
	if (link_)
		trace_ = link_->discontinue(trace_);
	if (!local_dir_.empty() || !link_) {
		local_dir_ = previous_dir_;
		ctf::TraceDir(local_dir_).write_metadata(metadata_->text());
	}
}

ChannelConsumer::EventCounter TraceOutput::event_counter(const StreamNames &names) const
{
	return consumer::event_counter(metadata_, names);
}

std::unique_ptr<PacketSink> TraceOutput::sink(const StreamNames &names, uint32_t num_cpus,
                                              const TracefileLimit &limit) const
{
	std::unique_ptr<PacketSink> relay, local;
	if (link_)
		relay = std::make_unique<RelaySink>(link_, trace_, names, num_cpus, limit);
	if (!local_dir_.empty())
		local = std::make_unique<FileSink>(local_dir_, names, num_cpus, limit);
	if (relay && local)
		return std::make_unique<TeeSink>(std::move(local), std::move(relay));
	return relay ? std::move(relay) : std::move(local);
}

} // namespace tracery::consumer
