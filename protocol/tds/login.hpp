#pragma once
// PRELOGIN ([MS-TDS] 2.2.6.5) and LOGIN7 (2.2.6.4), sans-I/O (codec.hpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/tds/packet.hpp"
#include "protocol/tds/types.hpp"

namespace wirepool::tds {

// ---------------------------------------------------------------------------
// PRELOGIN ([MS-TDS] 2.2.6.5)

namespace encrypt {
inline constexpr uint8_t kOff = 0x00;
inline constexpr uint8_t kOn = 0x01;
inline constexpr uint8_t kNotSup = 0x02;
inline constexpr uint8_t kReq = 0x03;
inline constexpr uint8_t kClientCertOff = 0x80;  ///< flag added to one of the above
}  // namespace encrypt

struct PreloginVersion {
  uint8_t major = 0;
  uint8_t minor = 0;
  uint16_t build = 0;
  uint16_t sub_build = 0;
};

/// The options a PRELOGIN carries (absent ones are nullopt).
struct Prelogin {
  std::optional<PreloginVersion> version;
  std::optional<uint8_t> encryption;
  std::optional<std::string> instance;   ///< INSTOPT bytes without the terminating NUL
  std::optional<std::string> thread_id;  ///< 0 or 4 bytes, raw
  std::optional<uint8_t> mars;
  std::optional<std::string> trace_id;  ///< 36 bytes: connection id, activity id, sequence
  std::optional<uint8_t> fed_auth_required;
  std::optional<std::string> nonce;  ///< 32 bytes
  /// Options with unknown tokens: kept as (token, data).
  std::vector<std::pair<uint8_t, std::string>> unknown;
};

/// Decodes a PRELOGIN payload: VERSION must be first, offsets and lengths must
/// lie inside the payload, the table must end with 0xFF. (The payload of an
/// assembled message; TLS-in-PRELOGIN payloads are not option tables.)
Decoded<Prelogin> decode_prelogin(Bytes payload);
/// Appends a PRELOGIN payload with the options present in `p`, in token order.
void encode_prelogin(std::string& out, const Prelogin& p);

/// The server's answer to `client`: VERSION `version`, ENCRYPTION `encryption`
/// (encrypt::kReq for the TDS 8.0 front end), INSTOPT 0 (a match), THREADID
/// empty, MARS 0 (not supported), FEDAUTHREQUIRED 0 only when the client sent it.
Prelogin prelogin_response(const Prelogin& client, uint8_t encryption, PreloginVersion version);
/// wirepool's version in SQL Server's form: 16.0.<build>.0 (SQL Server 2022's
/// major, so clients enable their 7.4 features; docs/tds.md).
PreloginVersion wirepool_prelogin_version();

// ---------------------------------------------------------------------------
// LOGIN7 ([MS-TDS] 2.2.6.4)

inline constexpr uint32_t kTds74 = 0x74000004;  ///< TDS 7.4 (what LOGINACK announces)
inline constexpr uint32_t kTds80 = 0x08000000;  ///< TDS 8.0 as a LOGIN7 may state it

namespace feature {
inline constexpr uint8_t kSessionRecovery = 0x01;
inline constexpr uint8_t kFedAuth = 0x02;
inline constexpr uint8_t kColumnEncryption = 0x04;
inline constexpr uint8_t kGlobalTransactions = 0x05;
inline constexpr uint8_t kAzureSqlSupport = 0x08;
inline constexpr uint8_t kDataClassification = 0x09;
inline constexpr uint8_t kUtf8Support = 0x0A;
inline constexpr uint8_t kAzureSqlDnsCaching = 0x0B;
inline constexpr uint8_t kJsonSupport = 0x0D;
inline constexpr uint8_t kVectorSupport = 0x0E;
inline constexpr uint8_t kTerminator = 0xFF;
}  // namespace feature
/// "UTF8_SUPPORT", ... or "0xNN".
std::string feature_name(uint8_t id);

struct FeatureExt {
  uint8_t id = 0;
  std::string data;
};

/// OptionFlags3 fExtension: the extension field points to a FeatureExt block.
inline constexpr uint8_t kOptionFlags3Extension = 0x10;
/// OptionFlags2 fIntSecurity: integrated (SSPI) authentication.
inline constexpr uint8_t kOptionFlags2IntSecurity = 0x80;

struct Login7 {
  uint32_t tds_version = kTds74;
  uint32_t packet_size = kDefaultPacketSize;
  uint32_t client_prog_ver = 0;
  uint32_t client_pid = 0;
  uint32_t connection_id = 0;
  uint8_t option_flags1 = 0xE0;  ///< fUseDB, fSetLang, fInitDBFatal... (tedious sends 0xF0)
  uint8_t option_flags2 = 0x03;  ///< fLanguage fatal, ODBC
  uint8_t type_flags = 0;
  uint8_t option_flags3 = 0;  ///< fExtension is set by encode_login7 when features exist
  int32_t client_time_zone = 0;
  uint32_t client_lcid = 0x0409;
  std::string host_name;  ///< UTF-8 (UCS-2 on the wire), as are all strings here
  std::string user_name;
  std::string password;  ///< clear text after de-obfuscation: never log it
  std::string app_name;
  std::string server_name;
  std::string client_interface;  ///< "Tedious", "ODBC", ...
  std::string language;
  std::string database;
  std::array<uint8_t, 6> client_id{};  ///< the client's MAC address
  std::string sspi;                    ///< raw SSPI bytes: integrated auth, refused by wirepool
  std::string attach_db_file;
  std::string change_password;  ///< clear text
  std::vector<FeatureExt> features;
  /// True when the client asked for integrated authentication (fIntSecurity or SSPI bytes).
  bool integrated_security() const {
    return (option_flags2 & kOptionFlags2IntSecurity) != 0 || !sspi.empty();
  }
  /// The feature with `id`, or nullptr.
  const FeatureExt* find_feature(uint8_t id) const;
};

/// The FEATUREEXTACK entries the server sends for `login`: UTF8_SUPPORT (data
/// 0x01) when the client asked for it and `utf8_supported`; nothing else, since
/// wirepool offers none of the other features (session recovery, federated
/// authentication, column encryption, ...). Send the token (even empty) when
/// the client sent a FeatureExt block.
std::vector<FeatureExt> feature_acks(const Login7& login, bool utf8_supported);

/// Decodes an assembled LOGIN7 payload. Every offset and length is checked
/// against the payload; strings must be whole UCS-2; the FeatureExt list must
/// end with 0xFF. Caps: 128 characters per name (sp_addlogin's limit) and 8000
/// bytes of SSPI.
Decoded<Login7> decode_login7(Bytes payload);
/// Appends a LOGIN7 payload (the password and change password obfuscated).
void encode_login7(std::string& out, const Login7& login);

/// The LOGIN7 password obfuscation: swap nibbles, then XOR 0xA5 (and back).
std::string obfuscate_password(std::string_view ucs2);
std::string deobfuscate_password(std::string_view wire);

}  // namespace wirepool::tds
