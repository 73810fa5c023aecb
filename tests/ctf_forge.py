"""ctf_forge: writes small CTF 1.8 traces by hand, for the reader's tests
(tests/view_test.py): any byte order, bit-level fields, variants, nested
arrays and sequences, several streams, packet-format metadata, and damaged
files. Values are packed as the metadata written with them says; the tests
then read the traces with babeltrace2 and with `tracery view`."""
import struct


class BitWriter:
    """Appends integers of any size at bit positions, in one byte order."""

    def __init__(self, big_endian):
        self.be = big_endian
        self.bits = []  # one 0/1 per bit, in stream order

    def align(self, a):
        while len(self.bits) % a:
            self.bits.append(0)

    def int(self, value, size, align=8):
        self.align(align)
        value &= (1 << size) - 1
        if self.be:
            self.bits.extend((value >> (size - 1 - i)) & 1 for i in range(size))
        else:
            # little-endian: bit i of the value goes to stream bit pos + i,
            # counted from each byte's least significant bit
            start = len(self.bits)
            self.bits.extend([0] * size)
            for i in range(size):
                self.bits[start + i] = (value >> i) & 1

    def raw(self, data):
        self.align(8)
        for b in data:
            self.int(b, 8)

    def string(self, s):
        self.raw(s.encode() + b"\0")

    def float(self, v, size, align):
        fmt = (">" if self.be else "<") + ("f" if size == 32 else "d")
        self.align(align)
        for b in struct.pack(fmt, v):  # the bytes in stream order
            self.int(b, 8, 8)

    def to_bytes(self):
        out = bytearray((len(self.bits) + 7) // 8)
        for p, bit in enumerate(self.bits):
            if bit:
                out[p // 8] |= (1 << (7 - p % 8)) if self.be else (1 << (p % 8))
        return bytes(out)

    def nbits(self):
        return len(self.bits)


def metadata_packets(text, trace_uuid, chunk=200):
    """The metadata text in LTTng's packet framing (magic 0x75D11D57)."""
    out = b""
    data = text.encode()
    for i in range(0, len(data), chunk):
        part = data[i:i + chunk]
        content = 37 + len(part)
        packet = content + 3  # a little padding
        out += struct.pack("<I16sIIIBBBBB", 0x75D11D57, trace_uuid.bytes, 0, content * 8, packet * 8, 0, 0, 0, 1, 8)
        out += part + b"\0" * 3
    return out
