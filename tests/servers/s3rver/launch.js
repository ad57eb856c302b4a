'use strict';
// Starts s3rver for kjit's tests (tests/support/s3_server.cpp) on 127.0.0.1, an ephemeral port,
// with one account whose key pair the test gives (the built-in S3RVER/S3RVER pair revoked) and the
// buckets it names, then prints "port N" on stdout. s3rver checks each request's SigV4 signature
// against that secret (SignatureDoesNotMatch), its key id (InvalidAccessKeyId) and its clock.
//   node launch.js DIR ACCESS_KEY_ID SECRET_ACCESS_KEY BUCKET...
const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');

const [directory, key, secret, ...buckets] = process.argv.slice(2);
AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
AWSAccount.DUMMY_ACCOUNT.createKeyPair(key, secret);
new S3rver({
  address: '127.0.0.1',
  port: 0,
  directory,
  silent: true,
  configureBuckets: buckets.map((name) => ({ name })),
})
  .run()
  .then((address) => process.stdout.write(`port ${address.port}\n`))
  .catch((error) => {
    process.stderr.write(`s3rver: ${error.stack || error}\n`);
    process.exit(1);
  });
