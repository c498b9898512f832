-- Device tokens as Apple and Google document them (issue 16). Registrations now store APNs hex
-- in lower case and refuse tokens no provider could accept; rows written before that:
--   * An APNs token stored in upper or mixed case and its lower-case twin are one device: keep
--     the row with the latest event (last event wins, as for every registration), delete the
--     other, and store the survivor in lower case, so a re-registration cannot send every push
--     twice and an unregister (now lowered) still finds the device.
--   * A token outside its platform's format can never be delivered: it is invalidated
--     (reason 'invalid-format'), so jobs stop fanning out pushes the pushers would park.
DELETE FROM devices d
USING devices keep
WHERE d.platform = 'apns' AND keep.platform = 'apns' AND d.app = keep.app
  AND lower(d.token) = lower(keep.token) AND d.id <> keep.id
  AND (d.last_event_at, d.id) < (keep.last_event_at, keep.id);

UPDATE devices SET token = lower(token), updated_at = now()
WHERE platform = 'apns' AND token <> lower(token);

UPDATE devices SET invalidated_at = now(), invalidation_reason = 'invalid-format', updated_at = now()
WHERE invalidated_at IS NULL
  AND ((platform = 'apns' AND token !~ '^([0-9a-fA-F]{2}){32,100}$')
    OR (platform = 'fcm' AND (token !~ '^[A-Za-z0-9_:-]+$' OR length(token) NOT BETWEEN 32 AND 4096)));
