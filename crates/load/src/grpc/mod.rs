//! gRPC calls described by their schema:
//! the method's descriptors, compiled from `.proto` files in pure Rust by protox (no protoc on
//! the user's machine) or read from a compiled `FileDescriptorSet` (`--protoset`, as ghz and
//! grpcurl take), and request messages from protobuf's canonical JSON mapping (prost-reflect),
//! encoded once and framed for the wire (`pelt_codec::grpc::frame`).

pub mod reflect;

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};
use std::path::{Path, PathBuf};

/// One method of a service, as a call names it.
#[derive(Debug, Clone)]
pub struct Method {
    /// Its HTTP/2 `:path`: `/package.Service/Method`.
    pub path: String,
    /// The client sends a stream of messages.
    pub client_streaming: bool,
    /// The server answers with a stream of messages.
    pub server_streaming: bool,
    input: MessageDescriptor,
    output: MessageDescriptor,
}

/// Compiles `proto` and what it imports, looked up in `includes` and then in `proto`'s own
/// folder (as protoc's `-I` and ghz's `--import-paths` do). An error names the file, line and
/// column protox reports.
pub fn compile(proto: &Path, includes: &[PathBuf]) -> Result<DescriptorPool, String> {
    let shown = proto.display();
    let folder = proto
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut paths = includes.to_vec();
    paths.push(folder.to_path_buf());
    let files = protox::compile([proto], &paths).map_err(|e| format!("--proto {}", at(&e)))?;
    DescriptorPool::from_file_descriptor_set(files).map_err(|e| format!("--proto {shown}: {e}"))
}

/// protox's error as one line that starts where it is: `file:line:column: message`.
fn at(e: &protox::Error) -> String {
    use miette::Diagnostic;
    let place = e
        .labels()
        .and_then(|mut labels| labels.next())
        .and_then(|label| {
            let code = e.source_code()?.read_span(label.inner(), 0, 0).ok()?;
            Some(format!(":{}:{}", code.line() + 1, code.column() + 1))
        });
    match e.file() {
        Some(file) => format!("{file}{}: {e}", place.unwrap_or_default()),
        None => e.to_string(),
    }
}

/// Reads a compiled `FileDescriptorSet` (`protoc --descriptor_set_out --include_imports`).
pub fn from_protoset(bytes: &[u8], shown: &str) -> Result<DescriptorPool, String> {
    DescriptorPool::decode(bytes).map_err(|e| format!("--protoset {shown}: {e}"))
}

/// The method `call` names in `pool`: `package.Service/Method` (or `package.Service.Method`,
/// as ghz's `--call` also takes it).
pub fn method(pool: &DescriptorPool, call: &str) -> Result<Method, String> {
    let (service, name) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .ok_or_else(|| format!("{call}: a call is package.Service/Method"))?;
    let service = service.trim_start_matches('/');
    let Some(s) = pool.get_service_by_name(service) else {
        let known: Vec<_> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(format!(
            "{call}: no service {service} in the schema (it has {})",
            list(&known)
        ));
    };
    let Some(m) = s.methods().find(|m| m.name() == name) else {
        let known: Vec<_> = s.methods().map(|m| m.name().to_string()).collect();
        return Err(format!(
            "{call}: {service} has no method {name} (it has {})",
            list(&known)
        ));
    };
    Ok(Method::of(&m))
}

fn list(names: &[String]) -> String {
    match names.is_empty() {
        true => "none".to_string(),
        false => names.join(", "),
    }
}

impl Method {
    fn of(m: &MethodDescriptor) -> Method {
        Method {
            path: format!("/{}/{}", m.parent_service().full_name(), m.name()),
            client_streaming: m.is_client_streaming(),
            server_streaming: m.is_server_streaming(),
            input: m.input(),
            output: m.output(),
        }
    }

    /// The request message's full name (`package.HelloRequest`).
    pub fn input_name(&self) -> &str {
        self.input.full_name()
    }

    /// The reply message's full name.
    pub fn output_name(&self) -> &str {
        self.output.full_name()
    }

    /// A request message from JSON (protobuf's canonical JSON mapping; a field the message
    /// lacks is an error), appended to `out` framed for the wire.
    pub fn frame_json(&self, json: &str, out: &mut Vec<u8>) -> Result<(), String> {
        let mut de = serde_json::Deserializer::from_str(json);
        let message = DynamicMessage::deserialize(self.input.clone(), &mut de)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| format!("a {} message from JSON: {e}", self.input_name()))?;
        pelt_codec::grpc::frame(&message.encode_to_vec(), out);
        Ok(())
    }

    /// A call's messages from JSON, framed: for a method the client streams to, a JSON array
    /// is the stream's messages, sent in turn before the half-close (ghz's `-d '[...]'`); any
    /// other JSON is one message.
    pub fn frame_call(&self, json: &str, out: &mut Vec<u8>) -> Result<(), String> {
        if !self.client_streaming || !json.trim_start().starts_with('[') {
            return self.frame_json(json, out);
        }
        let items: Vec<Box<serde_json::value::RawValue>> = serde_json::from_str(json)
            .map_err(|e| format!("a stream of {} messages from JSON: {e}", self.input_name()))?;
        for item in &items {
            self.frame_json(item.get(), out)?;
        }
        Ok(())
    }

    /// A request message already encoded (protobuf's binary form), checked against the
    /// method's input type, appended to `out` framed for the wire.
    pub fn frame_binary(&self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        DynamicMessage::decode(self.input.clone(), bytes)
            .map_err(|e| format!("not a binary {} message: {e}", self.input_name()))?;
        pelt_codec::grpc::frame(bytes, out);
        Ok(())
    }

    /// A reply message's bytes (without their prefix) as JSON, for captures and checks.
    pub fn reply_json(&self, bytes: &[u8]) -> Result<String, String> {
        let message = DynamicMessage::decode(self.output.clone(), bytes)
            .map_err(|e| format!("a {} reply: {e}", self.output_name()))?;
        serde_json::to_string(&message).map_err(|e| e.to_string())
    }
}

/// Templates: a call's rendered JSON made its framed message on the engine's workers; a
/// scenario step's reply made JSON for its captures and checks.
impl pelt_engine::MessageCodec for Method {
    fn encode(&self, text: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let text = std::str::from_utf8(text).map_err(|_| "a message that is not UTF-8")?;
        self.frame_call(text, out)
    }

    fn decode(&self, mut body: &[u8], out: &mut String) -> Result<(), String> {
        let mut messages = Vec::new();
        while !body.is_empty() {
            let Some((&[0, a, b, c, d], rest)) = body.split_first_chunk::<5>() else {
                return Err("not uncompressed gRPC messages".into());
            };
            let len = u32::from_be_bytes([a, b, c, d]) as usize;
            if rest.len() < len {
                return Err("a reply message cut short".into());
            }
            messages.push(self.reply_json(&rest[..len])?);
            body = &rest[len..];
        }
        match (self.server_streaming, messages.len()) {
            (true, _) => {
                out.push('[');
                out.push_str(&messages.join(","));
                out.push(']');
            }
            (false, 1) => out.push_str(&messages[0]),
            (false, n) => return Err(format!("{n} reply messages where one was due")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREETER: &str = r#"
syntax = "proto3";
package pelt.test;
import "common.proto";

service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc SayHellos (HelloRequest) returns (stream HelloReply);
  rpc Chat (stream HelloRequest) returns (stream HelloReply);
}

message HelloRequest {
  string name = 1;
  int32 times = 2;
  pelt.common.Tag tag = 3;
}

message HelloReply { string message = 1; }
"#;

    const COMMON: &str = r#"
syntax = "proto3";
package pelt.common;
message Tag { string value = 1; }
"#;

    /// The greeter's schema in a folder of its own, its import in another.
    fn schema() -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!("pelt-grpc-{}", std::process::id()));
        let (protos, imports) = (root.join("protos"), root.join("imports"));
        std::fs::create_dir_all(&protos).unwrap();
        std::fs::create_dir_all(&imports).unwrap();
        std::fs::write(protos.join("greeter.proto"), GREETER).unwrap();
        std::fs::write(imports.join("common.proto"), COMMON).unwrap();
        (protos.join("greeter.proto"), imports)
    }

    #[test]
    fn a_method_from_a_proto_encodes_json_messages_once_framed() {
        let (proto, imports) = schema();
        let pool = compile(&proto, &[imports]).unwrap();
        let m = method(&pool, "pelt.test.Greeter/SayHello").unwrap();
        assert_eq!(m.path, "/pelt.test.Greeter/SayHello");
        assert!(!m.client_streaming && !m.server_streaming);
        assert_eq!(m.input_name(), "pelt.test.HelloRequest");
        let mut out = Vec::new();
        m.frame_json(r#"{"name":"x","tag":{"value":"t"}}"#, &mut out)
            .unwrap();
        // name = 1 (string "x"), tag = 3 (a message holding value = 1, "t").
        assert_eq!(out, [0, 0, 0, 0, 8, 0x0a, 1, b'x', 0x1a, 3, 0x0a, 1, b't']);
        let reply = [0x0a, 2, b'h', b'i'];
        assert_eq!(m.reply_json(&reply).unwrap(), r#"{"message":"hi"}"#);
        let streams = method(&pool, "pelt.test.Greeter.SayHellos").unwrap();
        assert!(streams.server_streaming && !streams.client_streaming);
        // A scenario step's reply as JSON: one message's object, a stream's array.
        use pelt_engine::MessageCodec;
        let mut framed = Vec::new();
        pelt_codec::grpc::frame(&reply, &mut framed);
        let mut json = String::new();
        m.decode(&framed, &mut json).unwrap();
        assert_eq!(json, r#"{"message":"hi"}"#);
        let twice = [framed.clone(), framed.clone()].concat();
        assert!(m.decode(&twice, &mut String::new()).is_err());
        json.clear();
        streams.decode(&twice, &mut json).unwrap();
        assert_eq!(json, r#"[{"message":"hi"},{"message":"hi"}]"#);
        assert!(m.decode(&framed[..6], &mut String::new()).is_err());
        assert!(m.decode(&[1, 0, 0, 0, 0], &mut String::new()).is_err());
        let chat = method(&pool, "/pelt.test.Greeter/Chat").unwrap();
        assert!(chat.server_streaming && chat.client_streaming);
    }

    #[test]
    fn bad_schemas_calls_and_messages_are_one_line_errors() {
        let (proto, imports) = schema();
        // The import is not found without its folder.
        let e = compile(&proto, &[]).unwrap_err();
        assert!(e.contains("common.proto"), "{e}");
        let pool = compile(&proto, std::slice::from_ref(&imports)).unwrap();
        let e = method(&pool, "pelt.test.Greeter/Nope").unwrap_err();
        assert!(
            e.contains("has no method Nope (it has SayHello, SayHellos, Chat)"),
            "{e}"
        );
        let e = method(&pool, "pelt.test.Other/SayHello").unwrap_err();
        assert!(e.contains("no service pelt.test.Other"), "{e}");
        let m = method(&pool, "pelt.test.Greeter/SayHello").unwrap();
        let e = m
            .frame_json(r#"{"nmae":"x"}"#, &mut Vec::new())
            .unwrap_err();
        assert!(
            e.contains("pelt.test.HelloRequest") && e.contains("nmae"),
            "{e}"
        );
        let e = m
            .frame_json(r#"{"times":"many"}"#, &mut Vec::new())
            .unwrap_err();
        assert!(e.contains("HelloRequest"), "{e}");
        // A proto that does not compile: its file and line.
        let broken = imports.join("broken.proto");
        std::fs::write(
            &broken,
            "syntax = \"proto3\";\nmessage M {\n  strin name = 1;\n}\n",
        )
        .unwrap();
        let e = compile(&broken, &[]).unwrap_err();
        assert_eq!(e, "--proto broken.proto:3:3: name 'strin' is not defined");
    }

    #[test]
    fn a_protoset_reads_as_the_proto_compiles() {
        let (proto, imports) = schema();
        let files = protox::compile([&proto], [imports, proto.parent().unwrap().into()]).unwrap();
        let pool = from_protoset(&files.encode_to_vec(), "greeter.protoset").unwrap();
        assert!(method(&pool, "pelt.test.Greeter/SayHello").is_ok());
        let e = from_protoset(b"\xff\xff", "bad.protoset").unwrap_err();
        assert!(e.starts_with("--protoset bad.protoset: "), "{e}");
    }
}
