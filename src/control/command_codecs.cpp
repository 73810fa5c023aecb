// encode() and decode() of every request and reply of the tracery command
// (messages.hpp), compiled here once for the daemon, the command and the
// tests. A message missing here is a link error where it is sent or read.
#include "control/codec_impl.hpp"
#include "control/messages.hpp"

namespace tracery::control {

TRACERY_MESSAGE_CODEC(Create)
TRACERY_MESSAGE_CODEC(CreateReply)
TRACERY_MESSAGE_CODEC(Destroy)
TRACERY_MESSAGE_CODEC(DestroyReply)
TRACERY_MESSAGE_CODEC(EnableChannel)
TRACERY_MESSAGE_CODEC(EnableChannelReply)
TRACERY_MESSAGE_CODEC(EnableEvent)
TRACERY_MESSAGE_CODEC(EnableEventReply)
TRACERY_MESSAGE_CODEC(DisableEvent)
TRACERY_MESSAGE_CODEC(DisableEventReply)
TRACERY_MESSAGE_CODEC(AddContext)
TRACERY_MESSAGE_CODEC(AddContextReply)
TRACERY_MESSAGE_CODEC(Start)
TRACERY_MESSAGE_CODEC(StartReply)
TRACERY_MESSAGE_CODEC(Stop)
TRACERY_MESSAGE_CODEC(StopReply)
TRACERY_MESSAGE_CODEC(Status)
TRACERY_MESSAGE_CODEC(StatusReply)
TRACERY_MESSAGE_CODEC(List)
TRACERY_MESSAGE_CODEC(ListReply)
TRACERY_MESSAGE_CODEC(ListEvents)
TRACERY_MESSAGE_CODEC(ListEventsReply)
TRACERY_MESSAGE_CODEC(SnapshotRecord)
TRACERY_MESSAGE_CODEC(SnapshotRecordReply)
TRACERY_MESSAGE_CODEC(KernelEnableEvent)
TRACERY_MESSAGE_CODEC(KernelEnableEventReply)
TRACERY_MESSAGE_CODEC(KernelDisableEvent)
TRACERY_MESSAGE_CODEC(KernelDisableEventReply)
TRACERY_MESSAGE_CODEC(KernelEnableChannel)
TRACERY_MESSAGE_CODEC(KernelEnableChannelReply)
TRACERY_MESSAGE_CODEC(KernelTrack)
TRACERY_MESSAGE_CODEC(KernelTrackReply)
TRACERY_MESSAGE_CODEC(KernelUntrack)
TRACERY_MESSAGE_CODEC(KernelUntrackReply)
TRACERY_MESSAGE_CODEC(KernelList)
TRACERY_MESSAGE_CODEC(KernelListReply)
TRACERY_MESSAGE_CODEC(Track)
TRACERY_MESSAGE_CODEC(TrackReply)
TRACERY_MESSAGE_CODEC(Untrack)
TRACERY_MESSAGE_CODEC(UntrackReply)
TRACERY_MESSAGE_CODEC(KernelAddContext)
TRACERY_MESSAGE_CODEC(KernelAddContextReply)

} // namespace tracery::control
