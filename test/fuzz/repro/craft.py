#!/usr/bin/env python3
# Writes the smallest reproducers of the fuzz findings (docs/RELIABILITY.md,
# Findings) next to this script, one folder per target, checksums included;
# what the fuzzer found first is kept beside them as found-*.
# Usage: python3 test/fuzz/repro/craft.py
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
RAW, EF, LRC = 0, 1, 2


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli), reflected, as src/codec/crc32c.c."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def header(codec, count, last):
    return struct.pack('<BBHIII', 1, codec, 0, count, last, 0)


def with_checksum(lst):
    """The list with the CRC its header must carry (field taken as 0)."""
    lst = bytearray(lst)
    lst[12:16] = b'\0\0\0\0'
    lst[12:16] = struct.pack('<I', crc32c(bytes(lst)))
    return bytes(lst)


def raw(values, last=None):
    last = values[-1] if last is None else last
    return with_checksum(header(RAW, len(values), last) + struct.pack('<%dI' % len(values), *values))


def lrc_segment(first, bitoff, intercept, slope, max_dev, width):
    i = intercept & 0xFFFFFFFFFFFFFFFF
    return struct.pack('<8I', first, bitoff, i & 0xFFFFFFFF, i >> 32,
                       slope & 0xFFFFFFFF, slope >> 32, max_dev, width)


def ef(count, last, firsts, bitoffs, data_words):
    body = struct.pack('<%dI' % len(firsts), *firsts) + struct.pack('<%dI' % len(bitoffs), *bitoffs)
    body += struct.pack('<%dQ' % len(data_words), *data_words)
    return with_checksum(header(EF, count, last) + body)


def write(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    with open(os.path.join(HERE, target, name), 'wb') as f:
        f.write(data)


def ops_input(lists, limit=0):
    """list_ops input: control (bit 0: three lists), limit, 2-byte lengths but for the last."""
    out = struct.pack('<BH', 1 if len(lists) == 3 else 0, limit)
    for i, lst in enumerate(lists):
        if i + 1 < len(lists):
            out += struct.pack('<H', len(lst))
        out += lst
    return out


# F1: an LRC intercept within 2^32 of INT64_MAX: lrc_check evaluates the
# last posting, intercept + ((1 * slope) >> 16), and overflows int64.
write('list_open', 'F1-lrc-intercept-overflow',
      with_checksum(header(LRC, 2, 2)
                    + lrc_segment(first=1, bitoff=0, intercept=0x7FFFFFFF00000001,
                                  slope=(1 << 48) - 1, max_dev=0, width=0)
                    + b'\0' * 8))

# F2: a raw list whose ids are not increasing (opens: raw_check looks at the
# length and the last id only) as the list side of cpu_intersect_array_list
# by merge: the array {5, 10} matches both in block 0 = [5, 10, 0 ...], whose
# last id 0 moves the array on by nothing, and 10 again in block 1 = [6, 10]:
# three results for an out of room na = 2.
write('list_ops', 'F2-array-merge-unordered-raw',
      ops_input([raw([5, 10]), raw([5, 10] + [0] * 126 + [6, 10])]))
