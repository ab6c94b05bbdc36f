// fmt's compiled part, built once for the whole program.
//
// dl-train used fmt header-only (FMT_HEADER_ONLY), so each of the 300-odd files that format text
// compiled fmt's implementation again: about 3 s of every such file, a quarter of a cold build
// and more of each sanitizer build on CI's two cores. Debian ships the compiled part only as a
// shared library (libfmt.so, no static archive), and dl-train's binaries and device kits need no
// library beyond the system's, Open MPI and the CUDA ones (scripts/device/build_kit.sh). So fmt's
// implementation header is compiled here, once, with the templates its headers declare but leave
// to the library instantiated for char (dl-train formats no wide strings).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                         locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
