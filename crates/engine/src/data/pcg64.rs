//! NumPy's `PCG64` bit generator (PCG XSL-RR 128/64), seeded through `SeedSequence`, exactly as
//! `numpy.random.default_rng(seed)` does it (`numpy/random/bit_generator.pyx`, `_pcg64.pyx`,
//! `src/pcg64/pcg64.h`).

/// `SeedSequence`'s hashing constants (`bit_generator.pyx`).
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
const POOL_SIZE: usize = 4;

/// PCG's default 128-bit multiplier (`PCG_DEFAULT_MULTIPLIER_HIGH/LOW`).
const PCG_MULT: u128 = (2_549_297_995_355_413_924_u128 << 64) | 4_865_540_595_714_422_341_u128;

fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut value = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    value = value.wrapping_mul(*hash_const);
    value ^ (value >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let result = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    result ^ (result >> XSHIFT)
}

/// `SeedSequence(seed)` with no spawn key: its entropy pool after `mix_entropy`.
fn seed_sequence_pool(seed: u64) -> [u32; POOL_SIZE] {
    // `_coerce_to_uint32_array(int)`: 32-bit words, lowest first; 0 is one word.
    let lo = seed as u32;
    let hi = (seed >> 32) as u32;
    let entropy: &[u32] = if hi == 0 { &[lo] } else { &[lo, hi] };
    let mut hash_const = INIT_A;
    let mut mixer = [0_u32; POOL_SIZE];
    for (i, m) in mixer.iter_mut().enumerate() {
        *m = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash_const);
    }
    for i_src in 0..POOL_SIZE {
        for i_dst in 0..POOL_SIZE {
            if i_src != i_dst {
                let h = hashmix(mixer[i_src], &mut hash_const);
                mixer[i_dst] = mix(mixer[i_dst], h);
            }
        }
    }
    // Entropy never exceeds the pool here (at most two words), so there is nothing left to mix.
    mixer
}

/// `SeedSequence(seed).generate_state(4, np.uint64)`.
pub(crate) fn seed_sequence_state(seed: u64) -> [u64; 4] {
    let pool = seed_sequence_pool(seed);
    let mut hash_const = INIT_B;
    let mut words = [0_u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        let mut v = pool[i % POOL_SIZE] ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_B);
        v = v.wrapping_mul(hash_const);
        *w = v ^ (v >> XSHIFT);
    }
    // `.view(np.uint64)` on a little-endian machine.
    let mut out = [0_u64; 4];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32);
    }
    out
}

/// NumPy's `PCG64` state.
#[derive(Debug, Clone)]
pub(crate) struct Pcg64 {
    state: u128,
    inc: u128,
}

impl Pcg64 {
    /// `numpy.random.PCG64(seed)`.
    pub(crate) fn new(seed: u64) -> Self {
        let s = seed_sequence_state(seed);
        let initstate = (u128::from(s[0]) << 64) | u128::from(s[1]);
        let initseq = (u128::from(s[2]) << 64) | u128::from(s[3]);
        let mut rng = Self {
            state: 0,
            inc: (initseq << 1) | 1,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(initstate);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// `pcg64_next64`: step, then the XSL-RR output of the new state.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.step();
        let hi = (self.state >> 64) as u64;
        let lo = self.state as u64;
        (hi ^ lo).rotate_right((self.state >> 122) as u32)
    }

    /// `next_double`: 53 random bits scaled into [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }
}
