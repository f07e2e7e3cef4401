// Asio is compiled once here (BOOST_ASIO_SEPARATE_COMPILATION) instead of in
// every translation unit that includes it.
#include <boost/asio/impl/src.hpp>
