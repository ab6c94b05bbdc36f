#!/usr/bin/env python3
"""Reads TensorBoard event files back, written from the format's description and independent of
dl-train's own code: TFRecord framing (u64 length, masked CRC32C of it, payload, masked CRC32C of
the payload), each payload an Event protobuf whose schema is declared here with
python3-protobuf's descriptor classes (Event: wall_time 1, step 2, file_version 3, summary 5,
session_log 7; Summary: repeated value 1; Value: tag 1, simple_value 2; SessionLog: status 1,
START = 1). As TensorBoard does, a session start at step S drops the scalars read before it with
a step of S or more (what a run killed after its last checkpoint wrote).

  read_tfevents.py FILE...   (in name order) prints "session_start S dropped N" per session
                             start, then one line per scalar kept: step tag value; exits 1 on a
                             bad record
"""
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="reader_event.proto", package="reader",
                                               syntax="proto3")
    summary = proto.message_type.add(name="Summary")
    value = summary.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                      type_name=".reader.Summary.Value")
    session = proto.message_type.add(name="SessionLog")
    status = session.enum_type.add(name="Status")
    status.value.add(name="STATUS_UNSPECIFIED", number=0)
    status.value.add(name="START", number=1)
    session.field.add(name="status", number=1, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL,
                      type_name=".reader.SessionLog.Status")
    event = proto.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".reader.Summary")
    event.field.add(name="session_log", number=7, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".reader.SessionLog")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("reader.Event"))


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        if len(data) - at < 12:
            raise ValueError(f"{path}: truncated header at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if masked(header) != length_crc:
            raise ValueError(f"{path}: bad length CRC at byte {at}")
        payload = data[at + 12:at + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if len(payload) != length or masked(payload) != payload_crc:
            raise ValueError(f"{path}: bad payload CRC at byte {at}")
        yield payload
        at += 16 + length


def main(paths):
    Event = event_class()
    scalars = []
    for path in paths:
        for index, payload in enumerate(records(path)):
            event = Event()
            event.ParseFromString(payload)
            if index == 0:
                if event.file_version != "brain.Event:2":
                    raise ValueError(f"{path}: first record is not the file version: {event}")
                print(f"file_version {event.file_version}")
                continue
            if event.HasField("session_log") and event.session_log.status == 1:
                kept = [s for s in scalars if s[0] < event.step]
                print(f"session_start {event.step} dropped {len(scalars) - len(kept)}")
                scalars = kept
            for value in event.summary.value:
                scalars.append((event.step, value.tag, value.simple_value))
    for step, tag, value in scalars:
        print(f"{step} {tag} {value:.6g}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ValueError as error:
        print(f"read_tfevents: {error}", file=sys.stderr)
        sys.exit(1)
