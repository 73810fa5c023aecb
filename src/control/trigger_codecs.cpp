// encode() and decode() of the messages of triggers and notifications
// (trigger_messages.hpp), compiled here once for the daemon, the command,
// libtracery and the tests.
#include "control/codec_impl.hpp"
#include "control/trigger_messages.hpp"

namespace tracery::control {

TRACERY_MESSAGE_CODEC(AddTrigger)
TRACERY_MESSAGE_CODEC(AddTriggerReply)
TRACERY_MESSAGE_CODEC(ListTriggers)
TRACERY_MESSAGE_CODEC(ListTriggersReply)
TRACERY_MESSAGE_CODEC(RemoveTrigger)
TRACERY_MESSAGE_CODEC(RemoveTriggerReply)
TRACERY_MESSAGE_CODEC(Watch)
TRACERY_MESSAGE_CODEC(WatchReply)
TRACERY_MESSAGE_CODEC(Triggers)
TRACERY_MESSAGE_CODEC(Notification)
TRACERY_MESSAGE_CODEC(TriggerFired)

} // namespace tracery::control
