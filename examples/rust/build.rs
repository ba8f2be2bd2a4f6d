//! Compiles the model with `ember compile` (or takes a prebuilt bundle from EMBER_BUNDLE_DIR), links its
//! NAME.o into the program, and writes the header's sizes and offsets as Rust constants (bundle.rs).
//!
//! Environment: EMBER_BUNDLE_DIR (a bundle folder, skips compiling), EMBER_MODEL (default
//! ../lenet.onnx, made by `python ../make_lenet.py ../lenet.onnx`), EMBER (the ember command, default
//! "ember"; e.g. "python -m ember.cli").
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    for var in ["EMBER_BUNDLE_DIR", "EMBER_MODEL", "EMBER"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let bundle = match env::var("EMBER_BUNDLE_DIR") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => {
            let model = env::var("EMBER_MODEL").unwrap_or_else(|_| "../lenet.onnx".into());
            println!("cargo:rerun-if-changed={model}");
            let ember = env::var("EMBER").unwrap_or_else(|_| "ember".into());
            let mut words = ember.split_whitespace();
            let dir = out.join("bundle");
            let status = Command::new(words.next().expect("EMBER is empty"))
                .args(words)
                .args(["compile", &model, "-o"])
                .arg(&dir)
                .args(["--name", "lenet"])
                .status()
                .expect("cannot run ember (set EMBER, or EMBER_BUNDLE_DIR to a compiled bundle)");
            assert!(status.success(), "ember compile {model} failed");
            dir
        }
    };
    // The object goes to the linker as it is; Rust links position-independent executables, which the
    // host bundle's default (--reloc pic) allows.
    println!("cargo:rustc-link-arg={}", bundle.join("lenet.o").display());
    println!("cargo:rerun-if-changed={}", bundle.join("lenet.o").display());

    // NAME.h's #defines of plain numbers become Rust constants: sizes, alignment, tensor offsets.
    let header = fs::read_to_string(bundle.join("lenet.h")).expect("lenet.h");
    let mut consts = String::new();
    for line in header.lines() {
        let mut parts = line.split_whitespace();
        if let (Some("#define"), Some(name), Some(value), None) = (parts.next(), parts.next(), parts.next(), parts.next()) {
            if value.parse::<usize>().is_ok() {
                consts += &format!("pub const {name}: usize = {value};\n");
            }
        }
    }
    fs::write(out.join("bundle.rs"), consts).unwrap();
    fs::copy(bundle.join("lenet.weights.bin"), out.join("lenet.weights.bin")).unwrap();
}
