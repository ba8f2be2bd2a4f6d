//! Classify one 28x28 image with the LeNet-5 bundle: the three memory regions as 64-byte-aligned
//! buffers, the entry point through extern "C" (the signature NAME.h declares). Reads 784 raw float32
//! values from the file given as the first argument, else uses the same test pattern as examples/c.
#![allow(non_upper_case_globals)]

#[allow(dead_code)] // the header's numbers for every input and output, not all of them read here
mod bundle {
    include!(concat!(env!("OUT_DIR"), "/bundle.rs"));
}
use bundle::*;

extern "C" {
    fn lenet(constant_weight: *mut u8, mutable_weight: *mut u8, activations: *mut u8) -> i32;
}

/// A zeroed buffer of `size` bytes at an address that is a multiple of LENET_MEM_ALIGN.
struct Region {
    bytes: Vec<u8>,
    start: usize,
    size: usize,
}

impl Region {
    fn new(size: usize) -> Region {
        let bytes = vec![0u8; size + LENET_MEM_ALIGN];
        let start = bytes.as_ptr().align_offset(LENET_MEM_ALIGN);
        Region { bytes, start, size }
    }
    fn slice(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + self.size]
    }
}

fn main() {
    let mut constant = Region::new(LENET_CONSTANT_MEM_SIZE);
    constant.slice().copy_from_slice(include_bytes!(concat!(env!("OUT_DIR"), "/lenet.weights.bin")));
    let mut mutable = Region::new(LENET_MUTABLE_MEM_SIZE);
    let mut activations = Region::new(LENET_ACTIVATIONS_MEM_SIZE);

    let input: Vec<f32> = match std::env::args().nth(1) {
        Some(path) => {
            let raw = std::fs::read(&path).expect("cannot read the input file");
            assert_eq!(raw.len(), LENET_data_BYTES, "{path}: expected {LENET_data_SIZE} raw float32 values");
            raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        }
        None => (0..LENET_data_SIZE).map(|i| ((i * 7) % 17) as f32 / 16.0 - 0.5).collect(),
    };
    for (i, v) in input.iter().enumerate() {
        let at = LENET_data + 4 * i;
        mutable.slice()[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    let rc = unsafe { lenet(constant.slice().as_mut_ptr(), mutable.slice().as_mut_ptr(), activations.slice().as_mut_ptr()) };
    assert_eq!(rc, 0, "the bundle failed");

    let out = &mutable.slice()[LENET_prob..LENET_prob + LENET_prob_BYTES];
    let prob: Vec<f32> = out.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let mut best = 0;
    for (i, p) in prob.iter().enumerate() {
        println!("class {i}: {p:.9}");
        if *p > prob[best] {
            best = i;
        }
    }
    println!("top-1: {best}");
}
