//! `DType` ↔ `PJRT_Buffer_Type`.

use tpuport_model::DType;

use crate::error::{PjrtError, Result};
use crate::sys;

/// The PJRT buffer type for a dtype.
pub(crate) fn to_pjrt(d: DType) -> Result<sys::PJRT_Buffer_Type> {
    Ok(match d {
        DType::Bool => sys::PJRT_Buffer_Type_PRED,
        DType::I8 => sys::PJRT_Buffer_Type_S8,
        DType::I16 => sys::PJRT_Buffer_Type_S16,
        DType::I32 => sys::PJRT_Buffer_Type_S32,
        DType::I64 => sys::PJRT_Buffer_Type_S64,
        DType::U8 => sys::PJRT_Buffer_Type_U8,
        DType::U16 => sys::PJRT_Buffer_Type_U16,
        DType::U32 => sys::PJRT_Buffer_Type_U32,
        DType::U64 => sys::PJRT_Buffer_Type_U64,
        DType::F16 => sys::PJRT_Buffer_Type_F16,
        DType::F32 => sys::PJRT_Buffer_Type_F32,
        DType::F64 => sys::PJRT_Buffer_Type_F64,
        DType::BF16 => sys::PJRT_Buffer_Type_BF16,
        DType::C64 => sys::PJRT_Buffer_Type_C64,
        DType::C128 => sys::PJRT_Buffer_Type_C128,
        DType::F8E5M2 => sys::PJRT_Buffer_Type_F8E5M2,
        DType::F8E4M3FN => sys::PJRT_Buffer_Type_F8E4M3FN,
        DType::F8E5M2FNUZ => sys::PJRT_Buffer_Type_F8E5M2FNUZ,
        DType::F8E4M3FNUZ => sys::PJRT_Buffer_Type_F8E4M3FNUZ,
        DType::I4 => sys::PJRT_Buffer_Type_S4,
        DType::U4 => sys::PJRT_Buffer_Type_U4,
        other => return Err(PjrtError::UnsupportedType(other.name().to_owned())),
    })
}

/// The dtype of a PJRT buffer type.
pub(crate) fn from_pjrt(t: sys::PJRT_Buffer_Type) -> Result<DType> {
    Ok(match t {
        sys::PJRT_Buffer_Type_PRED => DType::Bool,
        sys::PJRT_Buffer_Type_S8 => DType::I8,
        sys::PJRT_Buffer_Type_S16 => DType::I16,
        sys::PJRT_Buffer_Type_S32 => DType::I32,
        sys::PJRT_Buffer_Type_S64 => DType::I64,
        sys::PJRT_Buffer_Type_U8 => DType::U8,
        sys::PJRT_Buffer_Type_U16 => DType::U16,
        sys::PJRT_Buffer_Type_U32 => DType::U32,
        sys::PJRT_Buffer_Type_U64 => DType::U64,
        sys::PJRT_Buffer_Type_F16 => DType::F16,
        sys::PJRT_Buffer_Type_F32 => DType::F32,
        sys::PJRT_Buffer_Type_F64 => DType::F64,
        sys::PJRT_Buffer_Type_BF16 => DType::BF16,
        sys::PJRT_Buffer_Type_C64 => DType::C64,
        sys::PJRT_Buffer_Type_C128 => DType::C128,
        sys::PJRT_Buffer_Type_F8E5M2 => DType::F8E5M2,
        sys::PJRT_Buffer_Type_F8E4M3FN => DType::F8E4M3FN,
        sys::PJRT_Buffer_Type_F8E5M2FNUZ => DType::F8E5M2FNUZ,
        sys::PJRT_Buffer_Type_F8E4M3FNUZ => DType::F8E4M3FNUZ,
        sys::PJRT_Buffer_Type_S4 => DType::I4,
        sys::PJRT_Buffer_Type_U4 => DType::U4,
        sys::PJRT_Buffer_Type_INVALID => return Err(PjrtError::UnsupportedType("INVALID".into())),
        other => return Err(PjrtError::UnsupportedType(format!("PJRT_Buffer_Type {other}"))),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trip_every_mapped_dtype() {
        let mut mapped = 0;
        for d in DType::ALL {
            if let Ok(t) = to_pjrt(d) {
                assert_eq!(from_pjrt(t).unwrap(), d);
                mapped += 1;
            }
        }
        assert_eq!(mapped, 21, "every dtype but string maps");
        assert!(to_pjrt(DType::String).is_err());
        assert!(from_pjrt(99).is_err());
    }
}
