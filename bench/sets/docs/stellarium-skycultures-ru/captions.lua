-- Set P's conversion (see convert.sh): pictures are not carried over, and a level-5 heading,
-- which the descriptions use only for a centred picture caption or a credit line, becomes a
-- paragraph (leading line breaks and spaces left by the removed picture dropped).
function Image(el)
  return {}
end

function Header(el)
  if el.level >= 5 then
    local content = el.content
    while #content > 0 and (content[1].t == "LineBreak" or content[1].t == "SoftBreak" or content[1].t == "Space") do
      content:remove(1)
    end
    return pandoc.Para(content)
  end
end
