#!/bin/sh
# One-shot MinIO setup for the compose stack, run by the `minio-init` service
# (image minio/mc) after MinIO is healthy. Safe to run again on every `up`.
#
# 1. the artifact bucket;
# 2. a dedicated S3 identity for Dossier, so the worker never holds MinIO's
#    root credentials (which can create users, change policies, delete any
#    bucket);
# 3. a policy that lets that identity touch only the artifact bucket, with
#    exactly the calls store/artifacts.py makes (HEAD bucket, stat/get/put/
#    remove object, multipart upload for objects over 5 MiB).
#
# Inputs (environment): MINIO_ROOT_USER, MINIO_ROOT_PASSWORD, S3_ACCESS_KEY,
# S3_SECRET_KEY, S3_BUCKET. Plain sh: the mc image is minimal (no grep, no jq).
set -eu

: "${MINIO_ROOT_USER:?}" "${MINIO_ROOT_PASSWORD:?}" "${S3_ACCESS_KEY:?}" "${S3_SECRET_KEY:?}" "${S3_BUCKET:?}"

if [ "$S3_ACCESS_KEY" = "$MINIO_ROOT_USER" ]; then
    # MinIO refuses to create a user named like the root user; say why instead.
    echo "minio-init: S3_ACCESS_KEY must differ from MINIO_ROOT_USER" >&2
    exit 1
fi

ALIAS=dossier
POLICY=dossier-artifacts-rw
POLICY_FILE=/tmp/$POLICY.json

mc alias set "$ALIAS" http://minio:9000 "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null

mc mb --ignore-existing "$ALIAS/$S3_BUCKET"

cat > "$POLICY_FILE" <<JSON
{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Effect": "Allow",
      "Action": ["s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"],
      "Resource": ["arn:aws:s3:::$S3_BUCKET"]
    },
    {
      "Effect": "Allow",
      "Action": [
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts"
      ],
      "Resource": ["arn:aws:s3:::$S3_BUCKET/*"]
    }
  ]
}
JSON

# `policy create` replaces an existing policy of that name: edits here apply on the next run.
mc admin policy create "$ALIAS" "$POLICY" "$POLICY_FILE"

# `user add` on an existing user updates its secret, so rotating S3_SECRET_KEY works.
mc admin user add "$ALIAS" "$S3_ACCESS_KEY" "$S3_SECRET_KEY"

# `policy attach` fails when the policy is already attached (every run after
# the first); that is only an error if the user still lacks the policy.
if ! mc admin policy attach "$ALIAS" "$POLICY" --user "$S3_ACCESS_KEY" >/dev/null 2>&1; then
    info="$(mc admin user info "$ALIAS" "$S3_ACCESS_KEY")"
    case "$info" in
        *"$POLICY"*) ;;
        *) echo "minio-init: could not attach policy $POLICY to $S3_ACCESS_KEY" >&2; echo "$info" >&2; exit 1 ;;
    esac
fi

echo "minio-init: bucket $S3_BUCKET ready; user $S3_ACCESS_KEY has policy $POLICY"
