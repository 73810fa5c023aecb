// libtracery-java.so: the native methods of org.tracery.Native (tracery.jar) over the run-time event API
// (tracery/runtime_event.h). The names of a definition become UTF-8 here, copied in bounded chunks
// (GetStringRegion); an emitted event's values arrive in native memory, the numbers then the strings' UTF-8
// (TraceryEvent.Writer's direct buffer, whose address Java passes), so emit calls nothing back in the JVM. No
// global reference is held, and every local reference is released before the next is made.
#include <jni.h>
#include <stdint.h>
#include <string.h>

#include <tracery/runtime_event.h>

#include "org_tracery_Native.h"

namespace {

static_assert(TRACERY_EVENT_MAX_FIELDS == 16, "org.tracery.Native.MAX_FIELDS says 16");

// The types of org.tracery.Field.Kind, by ordinal.
constexpr uint8_t kind_types[] = {TRACERY_TYPE_S8,     TRACERY_TYPE_S16,  TRACERY_TYPE_S32,   TRACERY_TYPE_S64,
                                  TRACERY_TYPE_DOUBLE, TRACERY_TYPE_BOOL, TRACERY_TYPE_STRING};
constexpr jint nr_kinds = sizeof kind_types / sizeof kind_types[0];

// Java UTF-16 code units copied per GetStringRegion call.
constexpr jsize chars_per_chunk = 256;

void throw_java(JNIEnv *env, const char *class_name, const char *message)
{
	jclass cls = env->FindClass(class_name);
	if (cls != nullptr) {
		env->ThrowNew(cls, message);
		env->DeleteLocalRef(cls);
	}
}

// Appends the UTF-8 of Java strings to a buffer of fixed capacity; remembers when one did not fit.
class Utf8Buffer {
public:
	Utf8Buffer(char *bytes, size_t capacity) : bytes_(bytes), capacity_(capacity) {}

	size_t size() const { return size_; }
	bool full() const { return full_; }

	// Appends the text of s, whose length (GetStringLength) is length: surrogate pairs become one 4-byte
	// character, lone surrogates U+FFFD. False if the buffer is full. The regions copied lie within the
	// string, whose length never changes, so GetStringRegion raises nothing.
	bool append(JNIEnv *env, jstring s, jsize length)
	{
		jchar chunk[chars_per_chunk];
		uint32_t high = 0; // a high surrogate waiting for its low one
		for (jsize at = 0; at < length; at += chars_per_chunk) {
			jsize n = length - at < chars_per_chunk ? length - at : chars_per_chunk;
			env->GetStringRegion(s, at, n, chunk);
			for (jsize i = 0; i < n; i++) {
				uint32_t c = chunk[i];
				if (high != 0) {
					bool low = c >= 0xDC00 && c <= 0xDFFF;
					put(low ? 0x10000 + ((high - 0xD800) << 10) + (c - 0xDC00) : 0xFFFD);
					high = 0;
					if (low)
						continue;
				}
				if (c >= 0xD800 && c <= 0xDBFF)
					high = c;
				else
					put(c >= 0xDC00 && c <= 0xDFFF ? 0xFFFD : c);
			}
			if (full_)
				return false;
		}
		if (high != 0)
			put(0xFFFD);
		return !full_;
	}

private:
	void put(uint32_t c)
	{
		char out[4];
		size_t n;
		if (c < 0x80) {
			out[0] = static_cast<char>(c);
			n = 1;
		} else if (c < 0x800) {
			out[0] = static_cast<char>(0xC0 | (c >> 6));
			out[1] = static_cast<char>(0x80 | (c & 0x3F));
			n = 2;
		} else if (c < 0x10000) {
			out[0] = static_cast<char>(0xE0 | (c >> 12));
			out[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
			out[2] = static_cast<char>(0x80 | (c & 0x3F));
			n = 3;
		} else {
			out[0] = static_cast<char>(0xF0 | (c >> 18));
			out[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
			out[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
			out[3] = static_cast<char>(0x80 | (c & 0x3F));
			n = 4;
		}
		if (full_ || capacity_ - size_ < n) {
			full_ = true;
			return;
		}
		memcpy(bytes_ + size_, out, n);
		size_ += n;
	}

	char *bytes_;
	size_t capacity_;
	size_t size_ = 0;
	bool full_ = false;
};

struct tracery_runtime_event *event_of(jlong handle)
{
	return reinterpret_cast<struct tracery_runtime_event *>(static_cast<intptr_t>(handle));
}

// Writes s's UTF-8 and a NUL to out (capacity bytes: the longest name libtracery accepts plus 3). A longer string
// is cut and ends in '?', a character no name may hold, so libtracery still refuses it. False, with a
// NullPointerException pending, if s is null.
bool name_utf8(JNIEnv *env, jstring s, char *out, size_t capacity)
{
	if (s == nullptr) {
		throw_java(env, "java/lang/NullPointerException", "tracery: a name is null");
		return false;
	}
	Utf8Buffer buffer(out, capacity - 3);
	buffer.append(env, s, env->GetStringLength(s));
	size_t size = buffer.size();
	if (buffer.full())
		out[size++] = '?';
	out[size] = '\0';
	return true;
}

} // namespace

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *, void *) { return JNI_VERSION_1_8; }

extern "C" JNIEXPORT jlong JNICALL Java_org_tracery_Native_define(JNIEnv *env, jclass, jstring provider, jstring name,
                                                                  jobjectArray field_names, jintArray field_kinds)
{
	jsize nr_fields = env->GetArrayLength(field_names);
	if (nr_fields != env->GetArrayLength(field_kinds) || nr_fields > TRACERY_EVENT_MAX_FIELDS) {
		throw_java(env, "java/lang/IllegalArgumentException", "tracery: bad field list");
		return 0;
	}
	jint kinds[TRACERY_EVENT_MAX_FIELDS];
	env->GetIntArrayRegion(field_kinds, 0, nr_fields, kinds);
	if (env->ExceptionCheck())
		return 0;
	char provider_bytes[TRACERY_EVENT_MAX_PROVIDER + 3];
	char name_bytes[TRACERY_EVENT_MAX_NAME + 3];
	if (!name_utf8(env, provider, provider_bytes, sizeof provider_bytes) ||
	    !name_utf8(env, name, name_bytes, sizeof name_bytes))
		return 0;
	struct tracery_event_field fields[TRACERY_EVENT_MAX_FIELDS] = {};
	char field_names_bytes[TRACERY_EVENT_MAX_FIELDS][TRACERY_EVENT_MAX_FIELD_NAME + 3];
	for (jsize i = 0; i < nr_fields; i++) {
		if (kinds[i] < 0 || kinds[i] >= nr_kinds) {
			throw_java(env, "java/lang/IllegalArgumentException", "tracery: unknown field kind");
			return 0;
		}
		auto field_name = static_cast<jstring>(env->GetObjectArrayElement(field_names, i));
		if (env->ExceptionCheck())
			return 0;
		bool ok = name_utf8(env, field_name, field_names_bytes[i], sizeof field_names_bytes[i]);
		env->DeleteLocalRef(field_name);
		if (!ok)
			return 0;
		fields[i].name = field_names_bytes[i];
		fields[i].type = kind_types[kinds[i]];
	}
	struct tracery_runtime_event *event =
		tracery_event_define(provider_bytes, name_bytes, fields, static_cast<uint32_t>(nr_fields));
	if (event == nullptr)
		throw_java(env, "java/lang/IllegalArgumentException", tracery_last_error());
	return static_cast<jlong>(reinterpret_cast<intptr_t>(event));
}

extern "C" JNIEXPORT jobject JNICALL Java_org_tracery_Native_enabledByte(JNIEnv *env, jclass, jlong handle)
{
	// The descriptor lives until the process exits, so the buffer may outlive nothing it points to.
	return env->NewDirectByteBuffer(&event_of(handle)->desc.enabled, 1);
}

extern "C" JNIEXPORT jlong JNICALL Java_org_tracery_Native_enabledAddress(JNIEnv *, jclass, jlong handle)
{
	return static_cast<jlong>(reinterpret_cast<intptr_t>(&event_of(handle)->desc.enabled));
}

extern "C" JNIEXPORT jlong JNICALL Java_org_tracery_Native_address(JNIEnv *env, jclass, jobject buffer)
{
	return static_cast<jlong>(reinterpret_cast<intptr_t>(env->GetDirectBufferAddress(buffer)));
}

extern "C" JNIEXPORT void JNICALL Java_org_tracery_Native_emit(JNIEnv *env, jclass, jlong handle, jlong address,
                                                               jint capacity, jint text_length, jint count)
{
	struct tracery_runtime_event *event = event_of(handle);
	const struct tracery_event_desc *desc = &event->desc;
	constexpr jint numbers_bytes = 8 * TRACERY_EVENT_MAX_FIELDS;
	if (address == 0 || count < 0 || static_cast<uint32_t>(count) != desc->nr_fields || text_length < 0 ||
	    capacity < numbers_bytes || text_length > capacity - numbers_bytes) {
		throw_java(env, "java/lang/IllegalArgumentException", "tracery: values that do not match the event");
		return;
	}
	// org.tracery.TraceryEvent.Writer's native buffer: the numbers, then the text.
	const char *values_memory = reinterpret_cast<const char *>(static_cast<intptr_t>(address));
	const char *text = values_memory + numbers_bytes;
	struct tracery_value values[TRACERY_EVENT_MAX_FIELDS];
	for (jint i = 0; i < count; i++) {
		struct tracery_value &value = values[i];
		uint64_t number;
		memcpy(&number, values_memory + 8 * i, sizeof number);
		value.len = 0;
		switch (desc->fields[i].type) {
		case TRACERY_TYPE_DOUBLE:
			memcpy(&value.v.f64, &number, sizeof value.v.f64);
			break;
		case TRACERY_TYPE_BOOL:
			value.v.u64 = number != 0;
			break;
		case TRACERY_TYPE_STRING: {
			uint64_t offset = number >> 32, length = number & 0xFFFFFFFF;
			if (offset + length > static_cast<uint64_t>(text_length)) {
				throw_java(env, "java/lang/IllegalArgumentException",
				           "tracery: a string outside its text");
				return;
			}
			value.v.ptr = text + offset;
			value.len = static_cast<uint32_t>(length);
			break;
		}
		default:
			value.v.i64 = static_cast<int64_t>(number);
			break;
		}
	}
	if (tracery_event_emit(event, values, static_cast<uint32_t>(count)) != 0)
		throw_java(env, "java/lang/IllegalArgumentException", tracery_last_error());
}
