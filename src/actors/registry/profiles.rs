//! The messages that create, edit and delete profiles.

use actix::prelude::*;

use super::{reply, Registry, Reply};
use crate::domain::ids::ProfileId;
use crate::domain::profile::{NewProfile, Profile, ProfilePatch};
use crate::domain::Rejection;
use crate::persist::journal::Durable;
use crate::persist::state::Record;

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct CreateProfile(pub NewProfile);

impl Handler<CreateProfile> for Registry {
    type Result = Reply<Profile>;

    fn handle(&mut self, CreateProfile(new): CreateProfile, _: &mut Self::Context) -> Self::Result {
        reply((|| {
            self.check_profile_unique(Some(&new.username), new.platform_id, None)?;
            let profile = Profile::create(ProfileId::new_random(), new, self.clock.now());
            Ok((self.make(Record::ProfileSaved(profile.clone())), profile))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<Profile, Rejection>")]
pub struct UpdateProfile(pub ProfileId, pub ProfilePatch);

impl Handler<UpdateProfile> for Registry {
    type Result = Reply<Profile>;

    fn handle(
        &mut self,
        UpdateProfile(id, patch): UpdateProfile,
        _: &mut Self::Context,
    ) -> Self::Result {
        reply((|| {
            let mut updated = self
                .book
                .profiles
                .get(&id)
                .ok_or_else(|| Self::not_found_profile(id))?
                .clone();
            updated.apply(patch);
            self.check_profile_unique(Some(&updated.username), updated.platform_id, Some(id))?;
            Ok((self.make(Record::ProfileSaved(updated.clone())), updated))
        })())
    }
}

#[derive(Message)]
#[rtype(result = "Result<(), Rejection>")]
pub struct DeleteProfile(pub ProfileId);

impl Handler<DeleteProfile> for Registry {
    type Result = Reply<()>;

    fn handle(
        &mut self,
        DeleteProfile(id): DeleteProfile,
        ctx: &mut Self::Context,
    ) -> Self::Result {
        let waits = self.releases_in_flight();
        self.after(ctx, waits, move |registry| {
            reply(registry.delete_profile(id))
        })
    }
}

impl Registry {
    fn delete_profile(&mut self, id: ProfileId) -> Result<(Durable, ()), Rejection> {
        (|| {
            if !self.book.profiles.contains_key(&id) {
                return Err(Self::not_found_profile(id));
            }
            let owned = self
                .book
                .bots
                .values()
                .filter(|bot| bot.owners.contains(&id))
                .count();
            if owned > 0 {
                return Err(Rejection::Conflict(format!(
                    "profile {id} owns {owned} listed bot(s); remove it from their owner_ids first"
                )));
            }
            Ok((self.make(Record::ProfileDeleted(id)), ()))
        })()
    }
}
