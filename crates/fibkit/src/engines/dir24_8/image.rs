//! `dir24-8` snapshots in saved images ([`crate::image`]): the three
//! arrays as sections, and the checks that make a mapped snapshot safe to
//! look up.

use super::*;

impl Dir24_8 {
    /// The arrays to save in an image.
    pub fn image_sections(&self) -> Vec<crate::image::SectionData<'_>> {
        use crate::image::SectionData;
        vec![
            SectionData::new("tbl24", &self.tbl24),
            SectionData::new("tbl8", &self.tbl8),
            SectionData::results(&self.results),
        ]
    }
}

impl Dir24_8<crate::image::Mapped> {
    /// The snapshot saved in `image`, read in place, after checking every
    /// invariant the lookup relies on: the direct table's size, whole
    /// groups, and every group number and result index in bounds.
    pub fn from_image(image: &crate::image::Image) -> Result<Self, crate::image::ImageError> {
        let snapshot = Self {
            tbl24: image.array::<u32>("tbl24")?,
            tbl8: image.array::<u32>("tbl8")?,
            results: image.results()?,
        };
        image.checked(snapshot, |snapshot| {
            if snapshot.tbl24.len() != BLOCKS || !snapshot.tbl8.len().is_multiple_of(GROUP_SIZE) {
                return Err("the tables have the wrong sizes".into());
            }
            let (groups, results) = (snapshot.tbl8.len() / GROUP_SIZE, snapshot.results.len());
            let bad_entry = |&entry: &u32| {
                if is_group(entry) {
                    group_of(entry) >= groups
                } else {
                    entry as usize >= results
                }
            };
            if snapshot.tbl24.iter().any(bad_entry)
                || snapshot.tbl8.iter().any(|&index| index as usize >= results)
            {
                return Err("an entry points outside its table".into());
            }
            Ok(())
        })
    }
}
