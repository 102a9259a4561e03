//! The two graphs: who waits for whom now ([`waitfor`]), and in which orders primitives have
//! ever been nested ([`lockorder`]).

pub mod lockorder;
pub mod waitfor;
